package io.kvindex.event;

import java.util.List;
import java.util.Objects;

/**
 * Blocks left a tier of a pod's cache (eviction, or promotion of a partial entry).
 *
 * @param blockHashes the removed blocks' external hashes, unsigned 64-bit
 * @param medium the tier as sent ({@code null} means GPU, see {@link Tiers})
 * @param groupIdx the KV-cache group, or {@code null}
 */
public record BlockRemoved(BlockHashes blockHashes, String medium, Integer groupIdx)
    implements KvEvent {

  public BlockRemoved {
    Objects.requireNonNull(blockHashes, "blockHashes");
  }

  /** A removal from a list of hashes (copied into an array). */
  public BlockRemoved(List<Long> blockHashes, String medium, Integer groupIdx) {
    this(BlockHashes.copyOf(Objects.requireNonNull(blockHashes, "blockHashes")), medium, groupIdx);
  }

  /** The normalised tier ({@code GPU} when the medium was nil). */
  public String tier() {
    return Tiers.normalize(medium);
  }

  /** The KV-cache group as the index keys it (see {@link KvEvent#cacheGroup}). */
  public int cacheGroup() {
    return KvEvent.cacheGroup(groupIdx);
  }
}
