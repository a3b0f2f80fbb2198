/**
 * The index inspector: {@link io.kvindex.inspect.RedisInspector} reads what an index records about
 * itself (pods and their ranks, groups, replicas, the writers' and routers' notes) into an {@link
 * io.kvindex.inspect.IndexReport}, writing nothing. {@code kvindex inspect} prints it; the lab's
 * audits compare it with the engines. It reads the key layout and stored values through {@link
 * io.kvindex.index.redis.KeySchema} and {@link io.kvindex.index.redis.StoredValues}.
 */
package io.kvindex.inspect;
