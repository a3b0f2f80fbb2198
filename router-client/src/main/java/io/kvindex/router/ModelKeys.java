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
 * @param seed the fleet's {@code PYTHONHASHSEED} as the string it is set to; {@code null} when the
 *     engines run without it (vLLM's default seed for the algorithm: see {@link
 *     HashAlgorithm#defaultSeed()}) and always in token mode
 * @param blockSize tokens per block (for engine keys: vLLM's block size times the DCP size)
 */
public record ModelKeys(KeyMode mode, HashAlgorithm hashAlgorithm, String seed, int blockSize) {

  public ModelKeys {
    Check.notNull(mode, "mode");
    Check.atLeast(blockSize, 1, "blockSize");
    if (mode == KeyMode.ENGINE) {
      Check.notNull(hashAlgorithm, "hashAlgorithm");
      if (seed == null && hashAlgorithm.defaultSeed().isEmpty()) {
        throw new IllegalArgumentException(hashAlgorithm.unreproducible());
      }
    } else if (hashAlgorithm != null || seed != null) {
      throw new IllegalArgumentException("token keys take neither a hash algorithm nor a seed");
    }
  }

  /**
   * Engine keys: vLLM's hash algorithm with the fleet's seed ({@code null}: the engines run without
   * {@code PYTHONHASHSEED}) and block size.
   *
   * @throws IllegalArgumentException when the seed is null and the algorithm has no default one
   *     ({@code xxhash}, {@code xxhash_cbor}: such engines' hashes cannot be reproduced)
   */
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
   * The form {@link #parse} reads: {@code engine:<algorithm>:<blockSize>} (no seed), {@code
   * engine:<algorithm>:<seed>:<blockSize>} or {@code token:<blockSize>}.
   */
  public String spec() {
    if (mode == KeyMode.TOKEN) {
      return "token:" + blockSize;
    }
    return "engine:"
        + hashAlgorithm.vllmName()
        + (seed == null ? "" : ":" + seed)
        + ":"
        + blockSize;
  }

  /**
   * Parses the form the command line takes: {@code engine:<algorithm>:<blockSize>} for engines
   * started without {@code PYTHONHASHSEED} (vLLM's default seed), {@code
   * engine:<algorithm>:<seed>:<blockSize>} for engines started with it (the seed as the string it
   * is set to; it may be empty or hold colons), or {@code token:<blockSize>}.
   *
   * @throws IllegalArgumentException with the expected form when {@code spec} is malformed, or when
   *     it names an algorithm without a seed whose engines' hashes cannot be reproduced
   */
  public static ModelKeys parse(String spec) {
    String[] parts = Check.notNull(spec, "spec").split(":", -1);
    try {
      if (parts.length >= 3 && parts[0].equals("engine")) {
        int blockSize = Integer.parseInt(parts[parts.length - 1]);
        String seed =
            parts.length == 3
                ? null
                : spec.substring(
                    "engine:".length() + parts[1].length() + 1,
                    spec.length() - parts[parts.length - 1].length() - 1);
        return engine(parts[1], seed, blockSize);
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
            + "' is malformed; expected engine:<algorithm>:<blockSize> (engines without"
            + " PYTHONHASHSEED, for example engine:sha256:16), engine:<algorithm>:<seed>:<blockSize>"
            + " (for example engine:sha256_cbor:42:16) or token:<blockSize>");
  }
}
