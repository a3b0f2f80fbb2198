package io.kvindex.ingester.stream;

/**
 * How many blocks an {@link EvictionModel} keeps: its estimate of what its engine holds when full.
 * It starts at the engine's capacity; each read of touches moves it by the mean error of the
 * index's predictions for them, by at most {@code capacity / 16} a read, within [{@code capacity /
 * 16}, {@code capacity}]. Not thread-safe.
 */
final class ModelSize {
  private final int capacity;
  private final double smallest;
  private final double largestStep;
  private double size;

  /** The size of a model of an engine that caches {@code capacity} blocks: that many at first. */
  ModelSize(int capacity) {
    this.capacity = capacity;
    this.smallest = Math.max(1, capacity / 16.0);
    this.largestStep = Math.max(1, capacity / 16.0);
    this.size = capacity;
  }

  /** The size in whole blocks. */
  int blocks() {
    return (int) size;
  }

  /** Sets the size, kept within its bounds (a former owner's). */
  void set(int sizeBlocks) {
    size = Math.max(smallest, Math.min(capacity, sizeBlocks));
  }

  /**
   * A read of {@code credited} touches whose predictions were off by {@code errors} blocks in all:
   * over-predicted (positive) shrinks the size, under-predicted grows it.
   */
  void corrected(long errors, int credited) {
    double step = Math.max(-largestStep, Math.min(largestStep, (double) errors / credited));
    size = Math.max(smallest, Math.min(capacity, size - step));
  }
}
