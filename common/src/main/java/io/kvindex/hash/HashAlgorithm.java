package io.kvindex.hash;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The vLLM {@code --prefix-caching-hash-algo} values a Java hasher can reproduce. Thread-safe
 * (immutable).
 */
public enum HashAlgorithm {
  /** SHA-256 over canonical CBOR; the chain carries full 32-byte digests. */
  SHA256_CBOR("sha256_cbor", 32),
  /**
   * vLLM v0.10.0 to v0.10.1: SHA-256 over canonical CBOR, truncated to its low 64 bits; the parent
   * inside the CBOR and NONE_HASH are 64-bit unsigned integers.
   */
  SHA256_CBOR_64BIT("sha256_cbor_64bit", 8),
  /** XXH3-128 (seed 0) over canonical CBOR; the chain carries 16-byte big-endian digests. */
  XXHASH_CBOR("xxhash_cbor", 16);

  private final String vllmName;
  private final int digestLength;

  HashAlgorithm(String vllmName, int digestLength) {
    this.vllmName = vllmName;
    this.digestLength = digestLength;
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
