package io.kvindex.router;

import io.kvindex.common.Check;
import io.kvindex.hash.HashAlgorithm;
import io.kvindex.index.KeyMode;

/**
 * How one model's block keys are computed; it must match how the ingesters index that model.
 * Immutable, so thread-safe.
 *
 * @param mode engine keys (vLLM's own hashes) or token keys (kvindex's chain over token ids)
 * @param hashAlgorithm vLLM's {@code --prefix-caching-hash-algo}; engine mode only, else {@code
 *     null}
 * @param seed the fleet's {@code PYTHONHASHSEED}; engine mode only, else {@code null}
 * @param blockSize tokens per block (for engine keys: vLLM's block size times the DCP size)
 */
public record ModelKeys(KeyMode mode, HashAlgorithm hashAlgorithm, String seed, int blockSize) {

  public ModelKeys {
    Check.notNull(mode, "mode");
    Check.atLeast(blockSize, 1, "blockSize");
    if (mode == KeyMode.ENGINE) {
      Check.notNull(hashAlgorithm, "hashAlgorithm");
      Check.notBlank(seed, "seed (the fleet's PYTHONHASHSEED)");
    } else if (hashAlgorithm != null || seed != null) {
      throw new IllegalArgumentException("token keys take neither a hash algorithm nor a seed");
    }
  }

  /** Engine keys: vLLM's hash algorithm with the fleet's seed and block size. */
  public static ModelKeys engine(HashAlgorithm hashAlgorithm, String seed, int blockSize) {
    return new ModelKeys(KeyMode.ENGINE, hashAlgorithm, seed, blockSize);
  }

  /**
   * Engine keys, the algorithm by its vLLM name ({@code sha256_cbor}, {@code xxhash_cbor}, ...).
   *
   * @throws IllegalArgumentException naming the accepted algorithms
   */
  public static ModelKeys engine(String hashAlgorithm, String seed, int blockSize) {
    return engine(HashAlgorithm.fromVllmName(hashAlgorithm), seed, blockSize);
  }

  /** Token keys with the fleet's block size. */
  public static ModelKeys token(int blockSize) {
    return new ModelKeys(KeyMode.TOKEN, null, null, blockSize);
  }

  /**
   * The form {@link #parse} reads: {@code engine:<algorithm>:<seed>:<blockSize>} or {@code
   * token:<blockSize>}.
   */
  public String spec() {
    return mode == KeyMode.ENGINE
        ? "engine:" + hashAlgorithm.vllmName() + ":" + seed + ":" + blockSize
        : "token:" + blockSize;
  }

  /**
   * Parses {@code engine:<algorithm>:<seed>:<blockSize>} or {@code token:<blockSize>}, the form the
   * command line takes.
   *
   * @throws IllegalArgumentException with the expected form when {@code spec} is malformed
   */
  public static ModelKeys parse(String spec) {
    String[] parts = Check.notNull(spec, "spec").split(":", -1);
    try {
      if (parts.length == 4 && parts[0].equals("engine")) {
        return engine(parts[1], parts[2], Integer.parseInt(parts[3]));
      }
      if (parts.length == 2 && parts[0].equals("token")) {
        return token(Integer.parseInt(parts[1]));
      }
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("the block size in '" + spec + "' is not an integer", e);
    }
    throw new IllegalArgumentException(
        "key mode '"
            + spec
            + "' is malformed; expected engine:<algorithm>:<seed>:<blockSize> (for example"
            + " engine:sha256_cbor:42:16) or token:<blockSize>");
  }
}
