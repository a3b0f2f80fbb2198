package io.kvindex.event;

/**
 * One KV-cache event of a vLLM engine, decoded from any wire era. Immutable and thread-safe.
 *
 * <p>Block hashes are unsigned 64-bit values held in a {@code long}; print them with {@link
 * Long#toUnsignedString(long)}.
 */
public sealed interface KvEvent permits BlockStored, BlockRemoved, AllBlocksCleared {

  /** The most KV-cache groups a model may have: the index keys a group in two bytes. */
  int MAX_CACHE_GROUP = 0xFFFF;

  /**
   * A {@code group_idx} as the index keys it: 0 when nil.
   *
   * @throws IllegalArgumentException if it is outside [0, {@value #MAX_CACHE_GROUP}]
   */
  static int cacheGroup(Integer groupIdx) {
    if (groupIdx == null) {
      return 0;
    }
    if (groupIdx < 0 || groupIdx > MAX_CACHE_GROUP) {
      throw new IllegalArgumentException(
          "group_idx must be in [0, " + MAX_CACHE_GROUP + "], got " + groupIdx);
    }
    return groupIdx;
  }
}
