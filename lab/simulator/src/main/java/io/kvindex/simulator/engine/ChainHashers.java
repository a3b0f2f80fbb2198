package io.kvindex.simulator.engine;

import io.kvindex.hash.BlockChain;
import io.kvindex.hash.BlockHashInputs;
import io.kvindex.hash.BlockHasher;
import io.kvindex.hash.HashAlgorithm;
import io.kvindex.wire.WireEra;
import java.util.Arrays;
import java.util.function.LongPredicate;

/** The engines' block hashers: the common {@link BlockHasher}, as vLLM hashes. */
public final class ChainHashers {
  /** Blocks hashed at a time by {@link ChainHasher#hashesWhile}: few wasted, few calls. */
  private static final int WALK_BLOCKS = 16;

  private ChainHashers() {}

  /**
   * vLLM's {@code algorithm} under {@code PYTHONHASHSEED=seed} ({@code null}: not set, vLLM's
   * default seed). Engines of eras before v0.14 hash a LoRA adapter's int id instead of its name.
   */
  public static ChainHasher engine(
      HashAlgorithm algorithm, String seed, int blockSize, WireEra era) {
    return new EngineChain(
        BlockHasher.create(algorithm, seed, blockSize), era.compareTo(WireEra.V0_14) < 0);
  }

  /**
   * Like vLLM started without {@code PYTHONHASHSEED}: {@code sha256_cbor} under a seed nobody else
   * knows, new for every engine process.
   */
  public static ChainHasher random(long seed, int blockSize, WireEra era) {
    return engine(
        HashAlgorithm.SHA256_CBOR, "sim-random-" + Long.toUnsignedString(seed), blockSize, era);
  }

  /** The common hasher with the request's extra keys as the engine's era sees them. */
  private record EngineChain(BlockHasher hasher, boolean loraById) implements ChainHasher {
    @Override
    public long[] hashes(int[] tokens, String loraName, String cacheSalt) {
      return hasher.blockHashes(tokens, inputs(loraName, cacheSalt));
    }

    @Override
    public long[] hashesWhile(int[] tokens, String loraName, String cacheSalt, LongPredicate held) {
      BlockHashInputs inputs = inputs(loraName, cacheSalt);
      int blockSize = hasher.blockSize();
      int blocks = tokens.length / blockSize;
      long[] out = new long[blocks];
      BlockChain chain = hasher.start();
      int done = 0;
      while (done < blocks) {
        int to = Math.min(blocks, done + WALK_BLOCKS);
        chain =
            hasher.extend(
                chain, Arrays.copyOfRange(tokens, done * blockSize, to * blockSize), inputs);
        for (int i = 0; i < chain.size(); i++) {
          out[done] = chain.hash(i);
          if (!held.test(out[done++])) {
            return Arrays.copyOf(out, done);
          }
        }
      }
      return out;
    }

    private BlockHashInputs inputs(String loraName, String cacheSalt) {
      BlockHashInputs.Builder inputs = BlockHashInputs.builder().cacheSalt(cacheSalt);
      if (loraById) {
        inputs.loraId(StepEvents.loraId(loraName));
      } else {
        inputs.loraName(loraName);
      }
      return inputs.build();
    }
  }
}
