/**
 * Prefix-cache block keys: {@link io.kvindex.hash.BlockHasher} reproduces vLLM's own chained block
 * hashes ({@code sha256_cbor}, {@code xxhash_cbor}, legacy {@code sha256_cbor_64bit}), and {@link
 * io.kvindex.hash.TokenKeys} is kvindex's own deterministic chain for fleets whose engine hashes
 * cannot be reproduced.
 */
package io.kvindex.hash;
