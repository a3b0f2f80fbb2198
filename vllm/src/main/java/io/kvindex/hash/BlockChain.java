package io.kvindex.hash;

import java.util.Arrays;
import java.util.Objects;

/**
 * A run of consecutive block hashes of one request, with the full digest of its last block so the
 * chain can be extended later ({@link BlockHasher#extend}). Immutable and thread-safe.
 */
public final class BlockChain {
  private final HashAlgorithm algorithm;
  private final int firstBlock;
  private final long[] hashes;
  private final byte[] lastDigest;

  BlockChain(HashAlgorithm algorithm, int firstBlock, long[] hashes, byte[] lastDigest) {
    this.algorithm = algorithm;
    this.firstBlock = firstBlock;
    this.hashes = hashes;
    this.lastDigest = lastDigest;
  }

  /**
   * An empty chain that continues after block {@code nextBlock - 1}, whose full digest is {@code
   * parentDigest}; with {@code nextBlock == 0} the digest must be the hasher's {@link
   * BlockHasher#noneHash()}.
   *
   * @throws IllegalArgumentException if the digest length does not fit the algorithm or {@code
   *     nextBlock} is negative
   */
  public static BlockChain resume(HashAlgorithm algorithm, byte[] parentDigest, int nextBlock) {
    Objects.requireNonNull(algorithm, "algorithm");
    Objects.requireNonNull(parentDigest, "parentDigest");
    if (parentDigest.length != algorithm.digestLength()) {
      throw new IllegalArgumentException(
          "parentDigest must be "
              + algorithm.digestLength()
              + " bytes for "
              + algorithm
              + ", got "
              + parentDigest.length);
    }
    if (nextBlock < 0) {
      throw new IllegalArgumentException("nextBlock must be >= 0, got " + nextBlock);
    }
    return new BlockChain(algorithm, nextBlock, new long[0], parentDigest.clone());
  }

  public HashAlgorithm algorithm() {
    return algorithm;
  }

  /** The index in the request of the first block of this run (0 for a chain from the start). */
  public int firstBlock() {
    return firstBlock;
  }

  /** The index of the block that would come next: {@code firstBlock() + size()}. */
  public int nextBlock() {
    return firstBlock + hashes.length;
  }

  /** The number of block hashes in this run. */
  public int size() {
    return hashes.length;
  }

  /** The external (unsigned 64-bit) hash of the {@code i}-th block of this run. */
  public long hash(int i) {
    return hashes[i];
  }

  /** The external hashes of this run, a copy. */
  public long[] hashes() {
    return hashes.clone();
  }

  long[] hashesNoCopy() {
    return hashes;
  }

  /** The full digest of the last block (the parent given to {@link #resume} when empty), a copy. */
  public byte[] lastDigest() {
    return lastDigest.clone();
  }

  byte[] lastDigestNoCopy() {
    return lastDigest;
  }

  @Override
  public String toString() {
    return "BlockChain["
        + algorithm
        + ", firstBlock="
        + firstBlock
        + ", hashes="
        + Arrays.toString(Arrays.stream(hashes).mapToObj(Long::toUnsignedString).toArray())
        + "]";
  }
}
