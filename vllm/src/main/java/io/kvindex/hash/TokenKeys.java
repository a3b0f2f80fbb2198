package io.kvindex.hash;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Objects;

/**
 * kvindex's own block keys ("token keys"): a deterministic 64-bit chain over token ids, rooted in
 * the model and the LoRA adapter, for fleets whose engine hashes cannot be reproduced (vLLM's
 * default pickle-based {@code sha256}). Thread-safe (stateless; scratch is per thread).
 *
 * <p>Definition (all integers big-endian, {@code u32(n)} is 4 bytes, {@code first8(h)} is the first
 * 8 bytes of {@code h} read as a signed 64-bit value):
 *
 * <pre>
 * root(model, lora) = first8(SHA1( "kvindex/token-keys/v1"
 *                                  || u32(len(model)) || model
 *                                  || u32(len(lora))  || lora ))
 *                     with model and lora as UTF-8 bytes, lora = "" when there is none
 * key_i             = first8(SHA1( key_{i-1} as 8 bytes || u32(tok_0) || ... || u32(tok_{B-1}) ))
 *                     with key_{-1} = root and the B token ids of block i
 * </pre>
 *
 * <p>SHA-1 is used because Redis Lua scripts can compute the same chain with {@code redis.sha1hex}:
 * the first 16 hex digits of its result are the key. It is not a security boundary; it only has to
 * spread keys and be reproducible everywhere.
 */
public final class TokenKeys {
  /** The domain string that starts every root's SHA-1 input. */
  public static final String DOMAIN = "kvindex/token-keys/v1";

  private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

  private TokenKeys() {}

  /**
   * The key that parents block 0 of every request of {@code model} with adapter {@code lora}.
   *
   * @param lora the LoRA adapter name, or {@code null} (same as {@code ""}) for the base model
   */
  public static long root(String model, String lora) {
    Objects.requireNonNull(model, "model");
    MessageDigest sha1 = SCRATCH.get().sha1;
    sha1.update(DOMAIN.getBytes(StandardCharsets.US_ASCII));
    updateLengthPrefixed(sha1, model);
    updateLengthPrefixed(sha1, lora == null ? "" : lora);
    return first8(sha1.digest());
  }

  /**
   * The key of the block made of {@code tokens[from..to)} whose parent block has key {@code
   * parentKey}.
   *
   * @throws IllegalArgumentException if the range is empty or a token id is negative
   */
  public static long next(long parentKey, int[] tokens, int from, int to) {
    Objects.checkFromToIndex(from, to, Objects.requireNonNull(tokens, "tokens").length);
    if (from == to) {
      throw new IllegalArgumentException("a block needs at least one token");
    }
    Scratch scratch = SCRATCH.get();
    byte[] buf = scratch.buffer(8 + 4 * (to - from));
    putLong(buf, 0, parentKey);
    int pos = 8;
    for (int i = from; i < to; i++) {
      int token = tokens[i];
      if (token < 0) {
        throw new IllegalArgumentException(
            "tokens[" + i + "] is " + token + "; token ids must be >= 0");
      }
      buf[pos++] = (byte) (token >>> 24);
      buf[pos++] = (byte) (token >>> 16);
      buf[pos++] = (byte) (token >>> 8);
      buf[pos++] = (byte) token;
    }
    scratch.sha1.update(buf, 0, pos);
    return first8(scratch.sha1.digest());
  }

  /**
   * The keys of the full blocks of {@code tokens} (a partial tail is ignored), chained from {@code
   * root}.
   *
   * @throws IllegalArgumentException if {@code blockSize < 1} or a token id is negative
   */
  public static long[] chain(long root, int[] tokens, int blockSize) {
    Objects.requireNonNull(tokens, "tokens");
    if (blockSize < 1) {
      throw new IllegalArgumentException("blockSize must be >= 1, got " + blockSize);
    }
    long[] keys = new long[tokens.length / blockSize];
    long parent = root;
    for (int i = 0; i < keys.length; i++) {
      parent = next(parent, tokens, i * blockSize, (i + 1) * blockSize);
      keys[i] = parent;
    }
    return keys;
  }

  private static void updateLengthPrefixed(MessageDigest sha1, String value) {
    byte[] utf8 = value.getBytes(StandardCharsets.UTF_8);
    byte[] length = new byte[4];
    putInt(length, utf8.length);
    sha1.update(length);
    sha1.update(utf8);
  }

  private static long first8(byte[] digest) {
    long value = 0;
    for (int i = 0; i < 8; i++) {
      value = (value << 8) | (digest[i] & 0xff);
    }
    return value;
  }

  private static void putLong(byte[] buf, int at, long value) {
    for (int i = 7; i >= 0; i--) {
      buf[at + i] = (byte) value;
      value >>>= 8;
    }
  }

  private static void putInt(byte[] buf, int value) {
    buf[0] = (byte) (value >>> 24);
    buf[1] = (byte) (value >>> 16);
    buf[2] = (byte) (value >>> 8);
    buf[3] = (byte) value;
  }

  /** Per-thread working state. */
  private static final class Scratch {
    final MessageDigest sha1 = newSha1();
    private byte[] buf = new byte[8 + 4 * 64];

    byte[] buffer(int size) {
      if (buf.length < size) {
        buf = new byte[Math.max(size, buf.length * 2)];
      }
      return buf;
    }

    private static MessageDigest newSha1() {
      try {
        return MessageDigest.getInstance("SHA-1");
      } catch (NoSuchAlgorithmException e) {
        throw new IllegalStateException("every Java runtime must provide SHA-1", e);
      }
    }
  }
}
