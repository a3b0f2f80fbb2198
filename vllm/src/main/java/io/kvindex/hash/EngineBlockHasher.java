package io.kvindex.hash;

import io.kvindex.event.ExtraKey;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.DigestException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.List;
import java.util.Objects;
import net.openhft.hashing.LongTupleHashFunction;

/**
 * vLLM's chained block hash, over pickle or canonical CBOR. Thread-safe (immutable; scratch is per
 * thread).
 */
final class EngineBlockHasher implements BlockHasher {
  /*
   * Implementation notes.
   *
   * vLLM (v1/core/kv_cache_utils.py, hash_block_tokens) hashes, per full block i, the Python value
   * (parent_i, tuple(tok_0 .. tok_{B-1}), extra_i): the parent digest as bytes, the token ids as a
   * tuple of ints, and the extra keys as a tuple or None. sha256 and xxhash hash its pickle
   * (protocol 5, PickleWriter); sha256_cbor and xxhash_cbor its canonical CBOR, where a tuple is
   * an array of unsigned ints in their shortest form (CborWriter). parent_0 is NONE_HASH =
   * hash(the seed string), and parent_{i+1} is the FULL digest of block i; only the last 8 bytes
   * leave the engine. The legacy sha256_cbor_64bit mode (v0.10.0-v0.10.1) kept only the low 64
   * bits of each SHA-256 as a Python int, so its parents (and NONE_HASH) are CBOR unsigned ints;
   * we keep them as 8 big-endian bytes and write them as integers. vLLM swaps a falsy parent for
   * NONE_HASH; an int parent of 0 is falsy, so that quirk is reproduced too.
   *
   * The seed: PYTHONHASHSEED as the string it is set to, else vLLM's default for the algorithm
   * (HashAlgorithm.defaultSeed: "vllm-none-hash" for sha256 and sha256_cbor since vLLM PR 51875;
   * xxhash's is random per process, so it has none).
   *
   * XXH3-128: python-xxhash's xxh3_128_digest is the canonical big-endian form, the high 64 bits
   * first. zero-allocation-hashing returns {low, high}, so the digest is high || low and the
   * external value is the low half.
   *
   * Speed: a block's value is written into one per-thread buffer and hashed with one update; the
   * per-thread MessageDigest avoids a provider lookup per call. No boxing on the token path.
   */

  private static final VarHandle LONG_BE =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);
  private static final LongTupleHashFunction XXH3_128 = LongTupleHashFunction.xx128();
  private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

  private final HashAlgorithm algorithm;
  private final String seed;
  private final int blockSize;
  private final byte[] noneHash;

  EngineBlockHasher(HashAlgorithm algorithm, String seed, int blockSize) {
    this.algorithm = Objects.requireNonNull(algorithm, "algorithm");
    this.seed = seed == null ? algorithm.seedWhenUnset() : seed;
    if (blockSize < 1) {
      throw new IllegalArgumentException("blockSize must be >= 1, got " + blockSize);
    }
    this.blockSize = blockSize;
    Scratch scratch = SCRATCH.get();
    KeyWriter out = scratch.writer(algorithm);
    out.reset();
    out.text(this.seed.getBytes(StandardCharsets.UTF_8));
    out.finish();
    this.noneHash = new byte[algorithm.digestLength()];
    digest(scratch, out, noneHash);
  }

  @Override
  public HashAlgorithm algorithm() {
    return algorithm;
  }

  @Override
  public String seed() {
    return seed;
  }

  @Override
  public int blockSize() {
    return blockSize;
  }

  @Override
  public byte[] noneHash() {
    return noneHash.clone();
  }

  @Override
  public BlockChain start() {
    return new BlockChain(algorithm, 0, new long[0], noneHash);
  }

  @Override
  public long[] blockHashes(int[] tokenIds) {
    return chain(tokenIds, BlockHashInputs.none()).hashesNoCopy();
  }

  @Override
  public long[] blockHashes(int[] tokenIds, BlockHashInputs inputs) {
    return chain(tokenIds, inputs).hashesNoCopy();
  }

  @Override
  public long[] blockHashes(int[] tokenIds, List<List<ExtraKey>> extraKeys) {
    return extend(start(), tokenIds, extraKeys).hashesNoCopy();
  }

  @Override
  public BlockChain chain(int[] tokenIds, BlockHashInputs inputs) {
    return extend(start(), tokenIds, inputs);
  }

  @Override
  public BlockChain extend(BlockChain prefix, int[] tokenIds, BlockHashInputs inputs) {
    Objects.requireNonNull(inputs, "inputs");
    int[] cursor = {0};
    return run(
        prefix,
        tokenIds,
        (out, run, start, end) -> inputs.write(out, prefix.nextBlock() + run, start, end, cursor));
  }

  @Override
  public BlockChain extend(BlockChain prefix, int[] tokenIds, List<List<ExtraKey>> extraKeys) {
    Objects.requireNonNull(extraKeys, "extraKeys");
    int blocks = Objects.requireNonNull(tokenIds, "tokenIds").length / blockSize;
    if (extraKeys.size() < blocks) {
      throw new IllegalArgumentException(
          "extraKeys has "
              + extraKeys.size()
              + " entries but the tokens make "
              + blocks
              + " full blocks; give one entry (null for none) per block");
    }
    return run(prefix, tokenIds, (out, run, start, end) -> writeKeys(out, extraKeys.get(run)));
  }

  /** Writes one block's extra-keys item; {@code run} is the block's index within this call. */
  @FunctionalInterface
  private interface ExtraKeysWriter {
    void write(KeyWriter out, int run, long start, long end);
  }

  private BlockChain run(BlockChain prefix, int[] tokenIds, ExtraKeysWriter extras) {
    Objects.requireNonNull(prefix, "prefix");
    Objects.requireNonNull(tokenIds, "tokenIds");
    if (prefix.algorithm() != algorithm) {
      throw new IllegalArgumentException(
          "prefix chain was made with " + prefix.algorithm() + ", this hasher uses " + algorithm);
    }
    int blocks = tokenIds.length / blockSize;
    long[] hashes = new long[blocks];
    byte[] parent = prefix.lastDigestNoCopy().clone();
    Scratch scratch = SCRATCH.get();
    KeyWriter out = scratch.writer(algorithm);
    long start = (long) prefix.nextBlock() * blockSize;
    for (int block = 0; block < blocks; block++, start += blockSize) {
      out.reset();
      out.beginTuple(3);
      writeParent(out, parent);
      writeTokens(out, tokenIds, block * blockSize);
      extras.write(out, block, start, start + blockSize);
      out.endTuple(3);
      out.finish();
      digest(scratch, out, parent);
      hashes[block] = external(parent);
    }
    return new BlockChain(algorithm, prefix.nextBlock(), hashes, parent);
  }

  private void writeParent(KeyWriter out, byte[] parent) {
    if (algorithm == HashAlgorithm.SHA256_CBOR_64BIT) {
      long value = (long) LONG_BE.get(parent, 0);
      ((CborWriter) out).unsigned(value == 0 ? (long) LONG_BE.get(noneHash, 0) : value);
    } else {
      out.bytes(parent);
    }
  }

  private void writeTokens(KeyWriter out, int[] tokenIds, int from) {
    out.beginTuple(blockSize);
    int negative = out.tokenIds(tokenIds, from, from + blockSize);
    if (negative >= 0) {
      throw new IllegalArgumentException(
          "tokenIds[" + negative + "] is " + tokenIds[negative] + "; token ids must be >= 0");
    }
    out.endTuple(blockSize);
  }

  private static void writeKeys(KeyWriter out, List<ExtraKey> keys) {
    if (keys == null || keys.isEmpty()) {
      out.none();
      return;
    }
    out.beginTuple(keys.size());
    for (ExtraKey key : keys) {
      if (key instanceof ExtraKey.Text text) {
        out.text(text.value().getBytes(StandardCharsets.UTF_8));
      } else if (key instanceof ExtraKey.Multimodal mm) {
        out.beginTuple(2);
        out.text(mm.identifier().getBytes(StandardCharsets.UTF_8));
        out.integer(mm.offset());
        out.endTuple(2);
      } else if (key instanceof ExtraKey.Digest digest) {
        out.bytes(digest.bytes());
      } else {
        throw new IllegalArgumentException("unsupported extra key " + key);
      }
    }
    out.endTuple(keys.size());
  }

  /** Hashes the written value into {@code out} (the algorithm's digest length). */
  private void digest(Scratch scratch, KeyWriter value, byte[] out) {
    switch (algorithm) {
      case SHA256, SHA256_CBOR -> sha256(scratch, value, out);
      case SHA256_CBOR_64BIT -> {
        sha256(scratch, value, scratch.sha256Out);
        System.arraycopy(scratch.sha256Out, 24, out, 0, 8);
      }
      case XXHASH, XXHASH_CBOR -> {
        XXH3_128.hashBytes(value.buffer(), 0, value.length(), scratch.xxh3);
        LONG_BE.set(out, 0, scratch.xxh3[1]);
        LONG_BE.set(out, 8, scratch.xxh3[0]);
      }
    }
  }

  private static void sha256(Scratch scratch, KeyWriter value, byte[] out) {
    scratch.sha256.update(value.buffer(), 0, value.length());
    try {
      scratch.sha256.digest(out, 0, 32);
    } catch (DigestException e) {
      throw new IllegalStateException("SHA-256 digest failed", e);
    }
  }

  /** The external value of a digest: its last 8 bytes, big-endian. */
  static long external(byte[] digest) {
    return (long) LONG_BE.get(digest, digest.length - 8);
  }

  @Override
  public String toString() {
    return "BlockHasher[" + algorithm + ", seed=" + seed + ", blockSize=" + blockSize + "]";
  }

  /** Per-thread working state. */
  private static final class Scratch {
    final CborWriter cbor = new CborWriter(1024);
    final PickleWriter pickle = new PickleWriter(1024);
    final MessageDigest sha256 = newSha256();
    final byte[] sha256Out = new byte[32];
    final long[] xxh3 = new long[2];

    KeyWriter writer(HashAlgorithm algorithm) {
      return algorithm.pickled() ? pickle : cbor;
    }

    private static MessageDigest newSha256() {
      try {
        return MessageDigest.getInstance("SHA-256");
      } catch (NoSuchAlgorithmException e) {
        throw new IllegalStateException("every Java runtime must provide SHA-256", e);
      }
    }
  }
}
