package io.kvindex.simulator.engine;

import io.kvindex.hash.BlockHashInputs;
import io.kvindex.hash.BlockHasher;
import io.kvindex.hash.HashAlgorithm;
import io.kvindex.wire.WireEra;

/** The engines' block hashers: the common {@link BlockHasher}, as vLLM hashes. */
public final class ChainHashers {
  private ChainHashers() {}

  /**
   * vLLM's {@code sha256_cbor} under {@code PYTHONHASHSEED=seed}. Engines of eras before v0.14 hash
   * a LoRA adapter's int id instead of its name.
   */
  public static ChainHasher engine(String seed, int blockSize, WireEra era) {
    BlockHasher hasher = BlockHasher.create(HashAlgorithm.SHA256_CBOR, seed, blockSize);
    boolean loraById = era.compareTo(WireEra.V0_14) < 0;
    return (tokens, loraName, cacheSalt) -> {
      BlockHashInputs.Builder inputs = BlockHashInputs.builder().cacheSalt(cacheSalt);
      if (loraById) {
        inputs.loraId(Engine.loraId(loraName));
      } else {
        inputs.loraName(loraName);
      }
      return hasher.blockHashes(tokens, inputs.build());
    };
  }

  /**
   * Like vLLM started without {@code PYTHONHASHSEED}: {@code sha256_cbor} under a seed nobody else
   * knows, new for every engine process.
   */
  public static ChainHasher random(long seed, int blockSize, WireEra era) {
    return engine("sim-random-" + Long.toUnsignedString(seed), blockSize, era);
  }
}
