package io.kvindex.index;

import io.kvindex.testing.UsesRedis;

/** The contract against a standalone Redis. */
@UsesRedis
class RedisPrefixIndexStandaloneTest extends RedisPrefixIndexContract {}
