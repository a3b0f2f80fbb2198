package io.kvindex.router;

import io.kvindex.hash.HashAlgorithm;
import io.kvindex.index.HybridHit.Eagle;
import io.kvindex.index.KeyMode;
import io.kvindex.index.KeySpec;

/**
 * How one model's block keys are computed, which must match how the ingesters index that model, and
 * whether its engines run an EAGLE draft model (which changes their hits, not the keys). Immutable,
 * so thread-safe.
 *
 * @param mode engine keys (vLLM's own hashes) or token keys (kvindex's chain over token ids)
 * @param hashAlgorithm vLLM's {@code --prefix-caching-hash-algo}; engine mode only, else {@code
 *     null}
 * @param seed the fleet's {@code PYTHONHASHSEED} as the string it is set to; {@code null} when the
 *     engines run without it (vLLM's default seed for the algorithm: see {@link
 *     HashAlgorithm#defaultSeed()}) and always in token mode
 * @param blockSize tokens per block (for engine keys: vLLM's block size times the DCP size)
 * @param eagle whether the engines run an EAGLE (or MTP) draft model ({@code
 *     --speculative-config}), whose groups drop their last matched block; {@link Eagle#OFF} when
 *     they do not
 */
public record ModelKeys(
    KeyMode mode, HashAlgorithm hashAlgorithm, String seed, int blockSize, Eagle eagle) {

  /** The spec suffix of {@link Eagle#FULL_ATTENTION}. */
  private static final String EAGLE = ":eagle";

  /** The spec suffix of {@link Eagle#ALL_GROUPS}. */
  private static final String EAGLE_ALL = ":eagle-all";

  public ModelKeys {
    new KeySpec(mode, hashAlgorithm, seed, blockSize); // the one place the rules live
    eagle = eagle == null ? Eagle.OFF : eagle;
  }

  /** Keys of engines without a draft model. */
  public ModelKeys(KeyMode mode, HashAlgorithm hashAlgorithm, String seed, int blockSize) {
    this(mode, hashAlgorithm, seed, blockSize, Eagle.OFF);
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

  /** These keys for engines that run a draft model so ({@link Eagle#OFF}: none). */
  public ModelKeys withEagle(Eagle eagle) {
    return new ModelKeys(mode, hashAlgorithm, seed, blockSize, eagle);
  }

  /**
   * The form {@link #parse} reads: {@code engine:<algorithm>:<blockSize>} (no seed), {@code
   * engine:<algorithm>:<seed>:<blockSize>} or {@code token:<blockSize>}, then {@code :eagle} or
   * {@code :eagle-all} when the engines run a draft model.
   */
  public String spec() {
    return keySpec().spec()
        + switch (eagle) {
          case OFF -> "";
          case FULL_ATTENTION -> EAGLE;
          case ALL_GROUPS -> EAGLE_ALL;
        };
  }

  /**
   * Parses the form the command line takes: {@code engine:<algorithm>:<blockSize>} for engines
   * started without {@code PYTHONHASHSEED} (vLLM's default seed), {@code
   * engine:<algorithm>:<seed>:<blockSize>} for engines started with it (the seed as the string it
   * is set to; it may be empty or hold colons), or {@code token:<blockSize>}; followed by {@code
   * :eagle} when the engines run an EAGLE or MTP draft model (the groups vLLM marks as holding the
   * draft's layers drop their last matched block: full attention), or {@code :eagle-all} when every
   * group drops (vLLM marks none).
   *
   * @throws IllegalArgumentException with the expected form when {@code spec} is malformed, or when
   *     it names an algorithm without a seed whose engines' hashes cannot be reproduced
   */
  public static ModelKeys parse(String spec) {
    if (spec != null && spec.endsWith(EAGLE)) {
      return of(KeySpec.parse(spec.substring(0, spec.length() - EAGLE.length())))
          .withEagle(Eagle.FULL_ATTENTION);
    }
    if (spec != null && spec.endsWith(EAGLE_ALL)) {
      return of(KeySpec.parse(spec.substring(0, spec.length() - EAGLE_ALL.length())))
          .withEagle(Eagle.ALL_GROUPS);
    }
    return of(KeySpec.parse(spec));
  }

  /** The same keys as {@code spec}, of engines without a draft model. */
  public static ModelKeys of(KeySpec spec) {
    return new ModelKeys(spec.mode(), spec.hashAlgorithm(), spec.seed(), spec.blockSize());
  }

  /** These keys as the index's {@link KeySpec} (the draft model is not part of them). */
  public KeySpec keySpec() {
    return new KeySpec(mode, hashAlgorithm, seed, blockSize);
  }
}
