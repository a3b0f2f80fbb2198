/**
 * The Redis implementation of the prefix index: the key layout ({@link
 * io.kvindex.index.redis.KeySchema}, the only place key names are made), the Lua scripts and their
 * shared library, the write, lease and maintenance calls, and the read path that plans each
 * lookup's HMGETs. Reach it through {@link io.kvindex.index.PrefixIndex#builder()}; only the key
 * schema (for tools that measure or delete an index) and the factory the builder calls are public.
 */
package io.kvindex.index.redis;
