package io.kvindex.router;

import io.kvindex.hash.BlockHashInputs;
import io.kvindex.hash.BlockHasher;
import io.kvindex.hash.TokenKeys;
import io.kvindex.index.KeyMode;

/**
 * Computes block keys in one key mode with the shared common code, so they equal the ingesters' by
 * construction. Holds nothing per model (token keys take the model at each call), so one instance
 * serves every model of that mode. Thread-safe (the hashers are).
 */
final class BlockKeyer {
  private final ModelKeys keys;
  private final BlockHasher engine;

  BlockKeyer(ModelKeys keys) {
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
   * One key per full block of {@code tokenIds} of {@code model}. Token keys ignore the cache salt:
   * the ingesters never see it, so it cannot enter their chain.
   */
  long[] keys(String model, String lora, String cacheSalt, int[] tokenIds) {
    if (engine != null) {
      return engine.blockHashes(
          tokenIds, BlockHashInputs.builder().loraName(lora).cacheSalt(cacheSalt).build());
    }
    return TokenKeys.chain(TokenKeys.root(model, lora), tokenIds, keys.blockSize());
  }
}
