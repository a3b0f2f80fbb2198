/**
 * The shared prefix index's API: {@link io.kvindex.index.PrefixIndex} (built by {@link
 * io.kvindex.index.PrefixIndexBuilder}), the identities it speaks of ({@link
 * io.kvindex.index.StreamId}, {@link io.kvindex.index.KeyMode}, {@link io.kvindex.index.Tier}), its
 * requests and outcomes, and the in-memory model every implementation is tested against. The Redis
 * implementation lives in {@code io.kvindex.index.redis}.
 */
package io.kvindex.index;
