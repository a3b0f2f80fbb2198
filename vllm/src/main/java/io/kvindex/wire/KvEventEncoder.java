package io.kvindex.wire;

import io.kvindex.event.KvEventBatch;
import java.util.Objects;

/**
 * Encodes a {@link KvEventBatch} byte for byte as vLLM's msgspec encoder does in a given {@link
 * WireEra}. Immutable and thread-safe.
 *
 * <p>The msgspec rules followed: array-like structs write every field of the era in declaration
 * order, nil defaults included; map events write {@code "type"} first, then the fields in
 * declaration order, always the required ones (even nil) and the optional ones ({@code extra_keys},
 * {@code group_idx}, {@code kv_cache_spec_kind}, {@code kv_cache_spec_sliding_window}, {@code
 * locality}, {@code ownership}, {@code session_id}) only when not nil. Integers take the smallest
 * form (unsigned for non-negative values), floats are always float64, strings, bins, arrays and
 * maps the smallest header. Fields the era cannot carry are left out (see {@link
 * WireEra#carried(KvEventBatch)}); skipped tags are not encoded; an empty per-block extra-keys list
 * is written as nil, which is what it decodes from.
 */
public final class KvEventEncoder {
  private final WireEra era;
  private final HashEncoding hashes;

  private KvEventEncoder(WireEra era, HashEncoding hashes) {
    this.era = era;
    this.hashes = hashes;
  }

  /** An encoder for {@code era} writing hashes as {@link HashEncoding#UINT64}. */
  public static KvEventEncoder of(WireEra era) {
    return of(era, HashEncoding.UINT64);
  }

  /** An encoder for {@code era} writing hashes as {@code hashes}. */
  public static KvEventEncoder of(WireEra era, HashEncoding hashes) {
    return new KvEventEncoder(
        Objects.requireNonNull(era, "era"), Objects.requireNonNull(hashes, "hashes"));
  }

  /** The era this encoder writes. */
  public WireEra era() {
    return era;
  }

  /** How this encoder writes hashes. */
  public HashEncoding hashEncoding() {
    return hashes;
  }

  /** The msgpack payload of {@code batch}, as the third frame of a live message carries it. */
  public byte[] encode(KvEventBatch batch) {
    return new PayloadWriter(era, hashes).write(Objects.requireNonNull(batch, "batch"));
  }
}
