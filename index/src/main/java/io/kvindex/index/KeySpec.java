package io.kvindex.index;

import io.kvindex.common.Check;
import io.kvindex.hash.HashAlgorithm;

/**
 * How a model's block keys are formed, in the command line's form ({@code engine:sha256:16}, {@code
 * engine:sha256_cbor:42:16}, {@code token:16}): what routers are told with {@code --model} and note
 * in the index, and what the ingesters' key check names when the engines hash otherwise. Immutable,
 * so thread-safe.
 *
 * @param mode engine keys (vLLM's own hashes) or token keys (kvindex's chain over token ids)
 * @param hashAlgorithm vLLM's {@code --prefix-caching-hash-algo}; engine mode only, else {@code
 *     null}
 * @param seed the engines' {@code PYTHONHASHSEED} as the string it is set to; {@code null} when the
 *     engines run without it (vLLM's default seed for the algorithm) and always in token mode
 * @param blockSize tokens per block (for engine keys: vLLM's block size times the DCP size)
 */
public record KeySpec(KeyMode mode, HashAlgorithm hashAlgorithm, String seed, int blockSize) {

  public KeySpec {
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

  /** Engine keys; {@code seed} null means the engines run without {@code PYTHONHASHSEED}. */
  public static KeySpec engine(HashAlgorithm hashAlgorithm, String seed, int blockSize) {
    return new KeySpec(KeyMode.ENGINE, hashAlgorithm, seed, blockSize);
  }

  /** Token keys with the fleet's block size. */
  public static KeySpec token(int blockSize) {
    return new KeySpec(KeyMode.TOKEN, null, null, blockSize);
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
   * Parses {@code engine:<algorithm>:<blockSize>} for engines started without {@code
   * PYTHONHASHSEED} (vLLM's default seed), {@code engine:<algorithm>:<seed>:<blockSize>} for
   * engines started with it (the seed as the string it is set to; it may be empty or hold colons),
   * or {@code token:<blockSize>}.
   *
   * @throws IllegalArgumentException with the expected form when {@code spec} is malformed, or when
   *     it names an algorithm without a seed whose engines' hashes cannot be reproduced
   */
  public static KeySpec parse(String spec) {
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
        return engine(HashAlgorithm.fromVllmName(parts[1]), seed, blockSize);
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

  @Override
  public String toString() {
    return spec();
  }
}
