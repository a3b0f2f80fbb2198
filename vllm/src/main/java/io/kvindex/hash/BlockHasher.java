package io.kvindex.hash;

import io.kvindex.event.ExtraKey;
import java.util.List;

/**
 * Computes vLLM's prefix-cache block hashes for a token sequence, exactly as an engine started with
 * {@code --prefix-caching-hash-algo <algorithm>}, {@code PYTHONHASHSEED=<seed>} (or none) and
 * {@code --block-size <blockSize>} does, so a router can look up blocks by the hashes engines
 * report in their KV events.
 *
 * <p>Only full blocks are hashed; a partial tail is ignored. Each returned value is the external
 * form events carry: the last 8 bytes of the block's digest as an unsigned 64-bit integer (Java
 * {@code long} bits; print with {@link Long#toUnsignedString(long)}).
 *
 * <pre>{@code
 * BlockHasher hasher = BlockHasher.create(HashAlgorithm.SHA256, null, 16); // vLLM's defaults
 * long[] hashes = hasher.blockHashes(tokenIds, BlockHashInputs.builder().loraName("Alice").build());
 * }</pre>
 *
 * <p>Thread-safe: instances are immutable and keep per-thread scratch buffers.
 */
public interface BlockHasher {

  /**
   * A hasher for one engine configuration.
   *
   * @param algorithm the engine's {@code --prefix-caching-hash-algo}
   * @param seed the engine's {@code PYTHONHASHSEED}, as the string it is set to (any string, empty
   *     included); {@code null} when the engines run without it, which means the algorithm's
   *     {@linkplain HashAlgorithm#defaultSeed() default seed}
   * @param blockSize tokens per hashed block (vLLM's block size times the DCP size, or the hybrid
   *     hash granularity)
   * @throws IllegalArgumentException if {@code blockSize < 1}, or if {@code seed} is null and the
   *     algorithm has no default seed (its engines' hashes cannot be reproduced)
   */
  static BlockHasher create(HashAlgorithm algorithm, String seed, int blockSize) {
    return new EngineBlockHasher(algorithm, seed, blockSize);
  }

  HashAlgorithm algorithm();

  /** The seed NONE_HASH is derived from: the one given, or the algorithm's default. */
  String seed();

  int blockSize();

  /** The digest that stands in as the parent of block 0 (NONE_HASH), a copy. */
  byte[] noneHash();

  /** An empty chain positioned before block 0, to {@link #extend}. */
  BlockChain start();

  /** The hashes of the full blocks of {@code tokenIds}, with no extra keys. */
  long[] blockHashes(int[] tokenIds);

  /** The hashes of the full blocks of {@code tokenIds}, with the request's extra keys. */
  long[] blockHashes(int[] tokenIds, BlockHashInputs inputs);

  /**
   * The hashes of the full blocks of {@code tokenIds} with explicit per-block extra keys, for
   * example those decoded from a {@code BlockStored} event.
   *
   * @param extraKeys entry {@code i} holds block {@code i}'s keys; a {@code null} or empty entry
   *     means none. It needs at least one entry per full block.
   */
  long[] blockHashes(int[] tokenIds, List<List<ExtraKey>> extraKeys);

  /** Like {@link #blockHashes(int[], BlockHashInputs)}, keeping the last digest to extend. */
  BlockChain chain(int[] tokenIds, BlockHashInputs inputs);

  /**
   * Hashes the full blocks of {@code tokenIds}, which continue the request right after {@code
   * prefix}: {@code tokenIds[0]} is token {@code prefix.nextBlock() * blockSize()} of the request.
   * The inputs describe the whole request (multimodal offsets are prompt positions, the cache salt
   * applies only if the run starts at block 0).
   *
   * @return the new blocks only, starting at block {@code prefix.nextBlock()}
   * @throws IllegalArgumentException if {@code prefix} was made for another algorithm
   */
  BlockChain extend(BlockChain prefix, int[] tokenIds, BlockHashInputs inputs);

  /** Like {@link #extend(BlockChain, int[], BlockHashInputs)} with explicit per-block keys. */
  BlockChain extend(BlockChain prefix, int[] tokenIds, List<List<ExtraKey>> extraKeys);
}
