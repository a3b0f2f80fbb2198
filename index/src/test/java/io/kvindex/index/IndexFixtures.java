package io.kvindex.index;

/** What tests do to an index beyond what processes do. Thread-safe (stateless). */
public final class IndexFixtures {
  private IndexFixtures() {}

  /**
   * Runs {@link PrefixIndex#collectGarbage} on every group, in steps of the default budget, until
   * all are done.
   */
  public static void collectAllGarbage(PrefixIndex index) {
    collectAllGarbage(index, PrefixIndexBuilder.DEFAULT_GC_BUDGET);
  }

  /**
   * Runs {@link PrefixIndex#collectGarbage} on every group, in steps of {@code budget}, until all
   * are done.
   *
   * @throws IllegalStateException if Redis did not answer a step
   */
  public static void collectAllGarbage(PrefixIndex index, int budget) {
    for (int g = 0; g < index.groups(); g++) {
      GcResult step;
      do {
        step = index.collectGarbage(g, budget);
        if (step.equals(GcResult.unanswered())) {
          throw new IllegalStateException("Redis did not answer a garbage collection step");
        }
      } while (!step.done());
    }
  }
}
