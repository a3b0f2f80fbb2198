package io.kvindex.wire;

/**
 * How {@link KvEventEncoder} writes block hashes (and parent hashes). Immutable.
 *
 * <p>An event carries only the 64-bit hash, so {@link #BIN} cannot reproduce the digest vLLM would
 * send; it writes a 32-byte bin whose first 24 bytes are zero and whose last 8 bytes are the hash
 * big-endian, which decodes back to the same value (vLLM's int conversion reads the last 8 bytes).
 */
public enum HashEncoding {
  /**
   * The default since v0.10.2: the smallest unsigned int form, so hashes of 2^63 and above are a
   * uint64 ({@code cf}).
   */
  UINT64,
  /** {@code VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0}: a 32-byte bin, zero-padded (see above). */
  BIN,
  /**
   * Before v0.10.2 (Python {@code hash()}): a signed int, so hashes of 2^63 and above are written
   * as negative int64 ({@code d3}) and small ones in the smallest form.
   */
  SIGNED
}
