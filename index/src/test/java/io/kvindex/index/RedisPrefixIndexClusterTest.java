package io.kvindex.index;

import io.kvindex.testing.UsesRedisCluster;

/** The contract against a Redis Cluster (3 primaries, 1 replica each): every script one slot. */
@UsesRedisCluster
class RedisPrefixIndexClusterTest extends RedisPrefixIndexContract {}
