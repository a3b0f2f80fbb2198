package io.kvindex.hash;

import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * The vLLM {@code --prefix-caching-hash-algo} values a Java hasher can reproduce. Thread-safe
 * (immutable).
 */
public enum HashAlgorithm {
  /**
   * vLLM's default: SHA-256 over Python's pickle (protocol 5) of the block's tuple; the chain
   * carries full 32-byte digests.
   */
  SHA256("sha256", 32, true, HashAlgorithm.DEFAULT_SEED),
  /** SHA-256 over canonical CBOR; the chain carries full 32-byte digests. */
  SHA256_CBOR("sha256_cbor", 32, false, HashAlgorithm.DEFAULT_SEED),
  /**
   * vLLM v0.10.0 to v0.10.1: SHA-256 over canonical CBOR, truncated to its low 64 bits; the parent
   * inside the CBOR and NONE_HASH are 64-bit unsigned integers.
   */
  SHA256_CBOR_64BIT("sha256_cbor_64bit", 8, false, null),
  /** XXH3-128 (seed 0) over the same pickle as {@link #SHA256}; 16-byte big-endian digests. */
  XXHASH("xxhash", 16, true, null),
  /** XXH3-128 (seed 0) over canonical CBOR; the chain carries 16-byte big-endian digests. */
  XXHASH_CBOR("xxhash_cbor", 16, false, null);

  /**
   * The string vLLM hashes into NONE_HASH, the parent of every chain's first block, when {@code
   * PYTHONHASHSEED} is not set and the algorithm is {@code sha256} or {@code sha256_cbor} (vLLM PR
   * 51875, August 2026; engines before it used a random one).
   */
  public static final String DEFAULT_SEED = "vllm-none-hash";

  private final String vllmName;
  private final int digestLength;
  private final boolean pickled;
  private final String defaultSeed;

  HashAlgorithm(String vllmName, int digestLength, boolean pickled, String defaultSeed) {
    this.vllmName = vllmName;
    this.digestLength = digestLength;
    this.pickled = pickled;
    this.defaultSeed = defaultSeed;
  }

  /** The name vLLM uses on its command line, for example {@code sha256_cbor}. */
  public String vllmName() {
    return vllmName;
  }

  /** Bytes in one chained digest: 32, 8 (the legacy 64-bit int, big-endian) or 16. */
  public int digestLength() {
    return digestLength;
  }

  /**
   * The seed an engine of today uses when {@code PYTHONHASHSEED} is not set: {@link #DEFAULT_SEED}
   * for {@code sha256} and {@code sha256_cbor}; empty for the others, whose engines then draw a
   * random seed per process, so that no other process can compute their hashes.
   */
  public Optional<String> defaultSeed() {
    return Optional.ofNullable(defaultSeed);
  }

  /** The default seed, or an exception that says what to configure instead. */
  String seedWhenUnset() {
    if (defaultSeed == null) {
      throw new IllegalArgumentException(unreproducible());
    }
    return defaultSeed;
  }

  /** Why this algorithm needs a seed, and what to do: one sentence for users. */
  public String unreproducible() {
    return vllmName
        + " without PYTHONHASHSEED cannot be reproduced: each engine draws a random NONE_HASH seed,"
        + " so no other process can compute its block hashes. Start the engines with"
        + " PYTHONHASHSEED set and give kvindex the same seed, or use token keys (token:<block size>)";
  }

  /** True for the algorithms that hash Python's pickle rather than canonical CBOR. */
  boolean pickled() {
    return pickled;
  }

  /**
   * The algorithm vLLM calls {@code name} (case-insensitive).
   *
   * @throws IllegalArgumentException naming the accepted values when {@code name} is none of them
   */
  public static HashAlgorithm fromVllmName(String name) {
    String wanted = String.valueOf(name).toLowerCase(Locale.ROOT);
    for (HashAlgorithm algorithm : values()) {
      if (algorithm.vllmName.equals(wanted)) {
        return algorithm;
      }
    }
    throw new IllegalArgumentException(
        "unknown hash algorithm '" + name + "'; expected one of " + names());
  }

  /** The accepted vLLM names, comma separated. */
  public static String names() {
    return Arrays.stream(values()).map(HashAlgorithm::vllmName).collect(Collectors.joining(", "));
  }

  @Override
  public String toString() {
    return vllmName;
  }
}
