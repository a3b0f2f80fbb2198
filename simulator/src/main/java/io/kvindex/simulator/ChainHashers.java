package io.kvindex.simulator;

import java.nio.charset.StandardCharsets;
import net.openhft.hashing.LongHashFunction;

/** The engines' block hashers. */
final class ChainHashers {
  private ChainHashers() {}

  /** vLLM's reproducible engine hashes (sha256_cbor, PYTHONHASHSEED, block size). */
  static ChainHasher engine(String seed, int blockSize) {
    // Until the common BlockHasher lands: a seeded chain that is at least reproducible.
    long s = LongHashFunction.xx3().hashBytes(seed.getBytes(StandardCharsets.UTF_8));
    return random(s, blockSize);
  }

  /** A chain no router can recompute: XXH3 under a private random seed. */
  static ChainHasher random(long seed, int blockSize) {
    return (tokens, loraName, cacheSalt) -> {
      int blocks = tokens.length / blockSize;
      long[] out = new long[blocks];
      long extra = LongHashFunction.xx3(seed).hashChars(String.valueOf(loraName));
      long parent = seed ^ extra;
      if (cacheSalt != null) {
        parent ^= LongHashFunction.xx3(seed).hashChars(cacheSalt) * 31;
      }
      for (int b = 0; b < blocks; b++) {
        LongHashFunction f = LongHashFunction.xx3(parent ^ (b == 0 ? 0 : extra));
        parent = f.hashInts(tokens, b * blockSize, blockSize);
        out[b] = parent;
      }
      return out;
    };
  }
}
