package io.kvindex.router;

import io.kvindex.common.Check;
import io.kvindex.index.PodMatch;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The answer to one {@link KvRouter#score} call: one {@link PodMatch} per candidate pod. Immutable
 * by convention (the block key array is shared, not copied: nobody may change it), so thread-safe.
 *
 * <p>When the index could not be read within the lookup budget the outcome is {@link
 * Outcome#UNAVAILABLE} and {@code pods} is empty: the caller should fall back to load balancing.
 *
 * @param model the model the prompt is for
 * @param blockSize the model's tokens per block
 * @param blockKeys the prompt's block keys, one per full block, as the index keys them (what {@link
 *     KvRouter#recordRoute} takes)
 * @param affinityKey a stable number derived from the prompt's first block, used to break ties
 *     deterministically (zero when the prompt has no full block)
 * @param pods the candidates, best score first (ties in candidate order)
 * @param outcome hit, miss or unavailable
 */
public record Scores(
    String model,
    int blockSize,
    long[] blockKeys,
    long affinityKey,
    List<PodMatch> pods,
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
    Check.notNull(model, "model");
    Check.atLeast(blockSize, 0, "blockSize");
    Check.notNull(blockKeys, "blockKeys");
    pods = List.copyOf(Check.notNull(pods, "pods"));
    Check.notNull(outcome, "outcome");
  }

  /** The empty answer for a lookup that ran out of its time budget. */
  public static Scores unavailable(String model, int blockSize, long[] blockKeys) {
    long affinity = blockKeys.length == 0 ? 0 : blockKeys[0];
    return new Scores(model, blockSize, blockKeys, affinity, List.of(), Outcome.UNAVAILABLE);
  }

  /** How many full blocks the prompt has. */
  public int queriedBlocks() {
    return blockKeys.length;
  }

  /** Whether the index answered; {@code false} means route by load alone. */
  public boolean indexAvailable() {
    return outcome != Outcome.UNAVAILABLE;
  }

  /** The entry of one pod, if it was a candidate and the index answered. */
  public Optional<PodMatch> pod(String pod) {
    return pods.stream().filter(p -> p.pod().equals(pod)).findFirst();
  }

  /** A match's depth in tokens: its blocks times the model's block size. */
  public int matchedTokens(PodMatch match) {
    return match.depth() * blockSize;
  }

  /** Equal when every component is, the block keys compared by content. */
  @Override
  public boolean equals(Object o) {
    return o instanceof Scores s
        && model.equals(s.model)
        && blockSize == s.blockSize
        && Arrays.equals(blockKeys, s.blockKeys)
        && affinityKey == s.affinityKey
        && pods.equals(s.pods)
        && outcome == s.outcome;
  }

  @Override
  public int hashCode() {
    return Objects.hash(model, blockSize, Arrays.hashCode(blockKeys), affinityKey, pods, outcome);
  }

  @Override
  public String toString() {
    return "Scores[model="
        + model
        + ", blockSize="
        + blockSize
        + ", blocks="
        + blockKeys.length
        + ", outcome="
        + outcome
        + ", pods="
        + pods
        + "]";
  }
}
