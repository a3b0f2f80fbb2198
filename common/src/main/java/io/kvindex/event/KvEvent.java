package io.kvindex.event;

/**
 * One KV-cache event of a vLLM engine, decoded from any wire era. Immutable and thread-safe.
 *
 * <p>Block hashes are unsigned 64-bit values held in a {@code long}; print them with {@link
 * Long#toUnsignedString(long)}.
 */
public sealed interface KvEvent permits BlockStored, BlockRemoved, AllBlocksCleared {}
