package io.kvindex.router;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The answer to one {@link KvRouter#score} call: one entry per candidate pod. Immutable, so
 * thread-safe.
 *
 * <p>When the index could not be read within the lookup budget the outcome is {@link
 * Outcome#UNAVAILABLE} and {@code pods} is empty: the caller should fall back to load balancing.
 *
 * @param model the model the prompt is for
 * @param blockSize the model's tokens per block
 * @param queriedBlocks how many full blocks the prompt has
 * @param affinityKey a stable number derived from the prompt's first block, used to break ties
 *     deterministically (zero when the prompt has no full block)
 * @param pods the candidates, best score first (ties in candidate order)
 * @param outcome hit, miss or unavailable
 */
public record Scores(
    String model,
    int blockSize,
    int queriedBlocks,
    long affinityKey,
    List<PodScore> pods,
    Outcome outcome) {

  /** What a lookup found. */
  public enum Outcome {
    /** At least one candidate holds at least the first block. */
    HIT,
    /** No candidate holds the first block. */
    MISS,
    /** The index could not be read within the lookup budget; {@code pods} is empty. */
    UNAVAILABLE
  }

  public Scores {
    Objects.requireNonNull(model, "model");
    Checks.nonNegative(blockSize, "blockSize");
    Checks.nonNegative(queriedBlocks, "queriedBlocks");
    pods = List.copyOf(Objects.requireNonNull(pods, "pods"));
    Objects.requireNonNull(outcome, "outcome");
  }

  /** The empty answer for a lookup that ran out of its time budget. */
  public static Scores unavailable(String model, int blockSize, int queriedBlocks, long affinity) {
    return new Scores(model, blockSize, queriedBlocks, affinity, List.of(), Outcome.UNAVAILABLE);
  }

  /** Whether the index answered; {@code false} means route by load alone. */
  public boolean indexAvailable() {
    return outcome != Outcome.UNAVAILABLE;
  }

  /** The entry of one pod, if it was a candidate and the index answered. */
  public Optional<PodScore> pod(String pod) {
    return pods.stream().filter(p -> p.pod().equals(pod)).findFirst();
  }
}
