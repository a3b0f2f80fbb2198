package io.kvindex.event;

import java.util.List;
import java.util.Objects;

/**
 * Blocks left a tier of a pod's cache (eviction, or promotion of a partial entry).
 *
 * @param blockHashes the removed blocks' external hashes, unsigned 64-bit
 * @param medium the tier as sent ({@code null} means GPU, see {@link Tiers})
 * @param groupIdx the KV-cache group, or {@code null}
 * @param locality whether the tier is the publishing engine's own ({@code LOCAL}) or one shared
 *     with others ({@code REMOTE}), as sent by vLLM's storage tiers (v0.26 and later, map events
 *     only), or {@code null} when unspecified; see {@link Localities}
 */
public record BlockRemoved(
    BlockHashes blockHashes, String medium, Integer groupIdx, String locality) implements KvEvent {

  public BlockRemoved {
    Objects.requireNonNull(blockHashes, "blockHashes");
  }

  /** A removal without a locality (every event but a storage tier's). */
  public BlockRemoved(BlockHashes blockHashes, String medium, Integer groupIdx) {
    this(blockHashes, medium, groupIdx, null);
  }

  /** A removal from a list of hashes (copied into an array), without a locality. */
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

  /**
   * Whether the blocks left a tier shared with other engines ({@code locality} {@code REMOTE}, any
   * case); {@code false} when the locality is local, absent or a value this version does not know.
   */
  public boolean remote() {
    return Localities.isRemote(locality);
  }
}
