package io.kvindex.router;

import io.kvindex.hash.BlockHashInputs;
import io.kvindex.hash.BlockHasher;
import io.kvindex.hash.TokenKeys;
import io.kvindex.index.KeyMode;

/**
 * Computes one model's block keys with the shared common code, so they equal the ingesters' by
 * construction. Thread-safe (the hashers are).
 */
final class BlockKeyer {
  private final String model;
  private final ModelKeys keys;
  private final BlockHasher engine;

  BlockKeyer(String model, ModelKeys keys) {
    this.model = model;
    this.keys = keys;
    this.engine =
        keys.mode() == KeyMode.ENGINE
            ? BlockHasher.create(keys.hashAlgorithm(), keys.seed(), keys.blockSize())
            : null;
  }

  ModelKeys config() {
    return keys;
  }

  /**
   * One key per full block of {@code tokenIds}. Token keys ignore the cache salt: the ingesters
   * never see it, so it cannot enter their chain.
   */
  long[] keys(String lora, String cacheSalt, int[] tokenIds) {
    if (engine != null) {
      return engine.blockHashes(
          tokenIds, BlockHashInputs.builder().loraName(lora).cacheSalt(cacheSalt).build());
    }
    return TokenKeys.chain(TokenKeys.root(model, lora), tokenIds, keys.blockSize());
  }
}
