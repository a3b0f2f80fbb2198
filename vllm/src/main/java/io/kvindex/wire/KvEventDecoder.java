package io.kvindex.wire;

import io.kvindex.event.KvEventBatch;
import java.util.Objects;

/**
 * Decodes one msgpack {@code KVEventBatch} payload, of any vLLM wire era, into a {@link
 * KvEventBatch}. Thread-safe (stateless; every call has its own cursor).
 *
 * <p>Accepted, in any mix:
 *
 * <ul>
 *   <li>the outer batch as an array {@code [ts, events]} or {@code [ts, events, rank]} (trailing
 *       elements ignored) or as a map {@code {ts, events, data_parallel_rank}};
 *   <li>events as tagged arrays (BlockStored of 6 to 12 elements, or up to 15 with {@code
 *       locality}, {@code ownership} and {@code session_id} after the spec fields, BlockRemoved of
 *       2 to 4, AllBlocksCleared of 1; trailing elements ignored) or tagged maps (key {@code
 *       "type"} in any position, optional keys absent, unknown keys ignored);
 *   <li>hashes as any msgpack integer (uint64 values of 2^63 and above kept as unsigned 64-bit
 *       bits, negative int64 kept as two's complement) or as a bin of 16 or 32·k bytes, whose last
 *       8 bytes read big-endian are the hash (vLLM's own int conversion);
 *   <li>{@code ts} as float64, float32 or an integer.
 * </ul>
 *
 * <p>Events with an unknown tag are skipped and their tag is listed in {@link
 * KvEventBatch#skippedTags()}. Anything else that does not fit, including truncation and bytes
 * after the batch, raises {@link MalformedEventException} naming the field and the byte offset; no
 * other exception escapes. A declared array, map, string or bin size larger than the remaining
 * bytes could hold fails before anything is allocated for it, so memory use is bounded by the
 * payload size.
 */
public final class KvEventDecoder {
  private KvEventDecoder() {}

  /**
   * Decodes a whole payload.
   *
   * @throws MalformedEventException if the bytes are not one valid {@code KVEventBatch}
   */
  public static KvEventBatch decode(byte[] payload) {
    Objects.requireNonNull(payload, "payload");
    return decode(payload, 0, payload.length);
  }

  /**
   * Decodes the payload held in {@code buffer[offset, offset + length)}; offsets in errors count
   * from {@code offset}. The buffer is read, never kept.
   *
   * @throws MalformedEventException if the bytes are not one valid {@code KVEventBatch}
   */
  public static KvEventBatch decode(byte[] buffer, int offset, int length) {
    Objects.requireNonNull(buffer, "buffer");
    Objects.checkFromIndexSize(offset, length, buffer.length);
    return new PayloadReader(buffer, offset, length, 0, true).readBatch();
  }

  /**
   * Decodes a whole payload as {@link #decode(byte[])} does (the same payloads are accepted and
   * refused), but every {@code BlockStored} comes without its token ids: for consumers that key
   * blocks by the engine's hashes, to which the tokens (most of a long prefill's bytes) are dead
   * weight.
   *
   * @throws MalformedEventException if the bytes are not one valid {@code KVEventBatch}
   */
  public static KvEventBatch decodeWithoutTokenIds(byte[] payload) {
    Objects.requireNonNull(payload, "payload");
    return new PayloadReader(payload, 0, payload.length, 0, false).readBatch();
  }
}
