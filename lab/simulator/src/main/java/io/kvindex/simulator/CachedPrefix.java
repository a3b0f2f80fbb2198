package io.kvindex.simulator;

import java.util.Arrays;
import java.util.Objects;

/**
 * What one engine holds of a prompt right now, as a router that knew every cache would see it: the
 * ground truth an oracle routes by. Immutable and thread-safe (the array is copied in and out).
 *
 * @param firstBlockHash the engine's hash of the prompt's first full block, the key a router's
 *     tie-break hashes; 0 when the prompt has no full block
 * @param tiers for each prompt block from block 0 on that the engine holds, up to the first it does
 *     not, the tiers holding it as bits of {@link io.kvindex.index.Tier}
 */
public record CachedPrefix(long firstBlockHash, int[] tiers) {
  public CachedPrefix {
    tiers = Objects.requireNonNull(tiers, "tiers").clone();
  }

  @Override
  public int[] tiers() {
    return tiers.clone();
  }

  /** Consecutive blocks held from block 0, in any tier. */
  public int depth() {
    return tiers.length;
  }

  /** Consecutive blocks from block 0 held in a tier of {@code tierBits}. */
  public int depthIn(int tierBits) {
    int depth = 0;
    while (depth < tiers.length && (tiers[depth] & tierBits) != 0) {
      depth++;
    }
    return depth;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof CachedPrefix c
        && firstBlockHash == c.firstBlockHash
        && Arrays.equals(tiers, c.tiers);
  }

  @Override
  public int hashCode() {
    return 31 * Long.hashCode(firstBlockHash) + Arrays.hashCode(tiers);
  }

  @Override
  public String toString() {
    return "CachedPrefix[firstBlockHash="
        + Long.toUnsignedString(firstBlockHash)
        + ", tiers="
        + Arrays.toString(tiers)
        + "]";
  }
}
