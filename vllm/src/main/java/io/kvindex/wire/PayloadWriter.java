package io.kvindex.wire;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.ExtraKey;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/**
 * Writes one batch with msgspec's byte choices. One instance per payload; not thread-safe.
 *
 * <p>msgpack-java's packLong, packDouble and the raw string, bin, array and map headers choose the
 * same forms as msgspec (smallest unsigned form for non-negative ints, str8 enabled, float64).
 * Strings are written as UTF-8 bytes behind an exact header rather than through packString, whose
 * long-string path sizes the header from an estimate. Map headers: msgspec picks fixmap when the
 * struct's declared field count plus the tag is below 16 and patches the count; every event struct
 * vLLM ever declared stays below that, so the header is a fixmap of the entries written.
 */
final class PayloadWriter {
  private static final byte[] ZEROS = new byte[24];

  private final WireEra era;
  private final HashEncoding hashes;
  private final MessageBufferPacker out = MessagePack.newDefaultBufferPacker();
  private final byte[] scratch = new byte[9];

  PayloadWriter(WireEra era, HashEncoding hashes) {
    this.era = era;
    this.hashes = hashes;
  }

  byte[] write(KvEventBatch batch) {
    try {
      out.packArrayHeader(era.batchLength());
      out.packDouble(batch.timestamp());
      out.packArrayHeader(batch.events().size());
      for (KvEvent event : batch.events()) {
        event(event);
      }
      if (era.batchLength() > 2) {
        intOrNil(batch.dataParallelRank());
      }
      return out.toByteArray();
    } catch (IOException e) {
      throw new UncheckedIOException("writing to memory failed", e);
    }
  }

  private void event(KvEvent event) throws IOException {
    if (event instanceof BlockStored s) {
      if (era.mapEvents()) {
        mapStored(s);
      } else {
        arrayStored(s);
      }
    } else if (event instanceof BlockRemoved r) {
      if (era.mapEvents()) {
        mapRemoved(r);
      } else {
        arrayRemoved(r);
      }
    } else if (event instanceof AllBlocksCleared) {
      if (era.mapEvents()) {
        out.packMapHeader(1);
        string("type");
      } else {
        out.packArrayHeader(1);
      }
      string("AllBlocksCleared");
    }
  }

  private void arrayStored(BlockStored s) throws IOException {
    int n = era.storedLength();
    out.packArrayHeader(n);
    string("BlockStored");
    hashes(s.blockHashes());
    hashOrNil(s.parentBlockHash());
    tokens(s.tokenIds());
    out.packLong(s.blockSize());
    intOrNil(s.loraId());
    if (n > 6) {
      stringOrNil(s.medium());
    }
    if (n > 7) {
      stringOrNil(s.loraName());
    }
    if (n > 8) {
      extraKeys(s.extraKeys());
    }
    if (n > 9) {
      intOrNil(s.groupIdx());
    }
    if (n > 10) {
      stringOrNil(s.kvCacheSpecKind());
      intOrNil(s.kvCacheSpecSlidingWindow());
    }
  }

  private void arrayRemoved(BlockRemoved r) throws IOException {
    int n = era.removedLength();
    out.packArrayHeader(n);
    string("BlockRemoved");
    hashes(r.blockHashes());
    if (n > 2) {
      stringOrNil(r.medium());
    }
    if (n > 3) {
      intOrNil(r.groupIdx());
    }
  }

  private void mapStored(BlockStored s) throws IOException {
    int optional =
        present(s.extraKeys())
            + present(s.groupIdx())
            + present(s.kvCacheSpecKind())
            + present(s.kvCacheSpecSlidingWindow())
            + present(s.locality())
            + present(s.ownership())
            + present(s.sessionId());
    out.packMapHeader(8 + optional);
    string("type");
    string("BlockStored");
    string("block_hashes");
    hashes(s.blockHashes());
    string("parent_block_hash");
    hashOrNil(s.parentBlockHash());
    string("token_ids");
    tokens(s.tokenIds());
    string("block_size");
    out.packLong(s.blockSize());
    string("lora_id");
    intOrNil(s.loraId());
    string("medium");
    stringOrNil(s.medium());
    string("lora_name");
    stringOrNil(s.loraName());
    if (s.extraKeys() != null) {
      string("extra_keys");
      extraKeys(s.extraKeys());
    }
    if (s.groupIdx() != null) {
      string("group_idx");
      out.packLong(s.groupIdx());
    }
    if (s.kvCacheSpecKind() != null) {
      string("kv_cache_spec_kind");
      string(s.kvCacheSpecKind());
    }
    if (s.kvCacheSpecSlidingWindow() != null) {
      string("kv_cache_spec_sliding_window");
      out.packLong(s.kvCacheSpecSlidingWindow());
    }
    if (s.locality() != null) {
      string("locality");
      string(s.locality());
    }
    if (s.ownership() != null) {
      string("ownership");
      string(s.ownership());
    }
    if (s.sessionId() != null) {
      string("session_id");
      string(s.sessionId());
    }
  }

  private void mapRemoved(BlockRemoved r) throws IOException {
    out.packMapHeader(3 + present(r.groupIdx()) + present(r.locality()));
    string("type");
    string("BlockRemoved");
    string("block_hashes");
    hashes(r.blockHashes());
    string("medium");
    stringOrNil(r.medium());
    if (r.groupIdx() != null) {
      string("group_idx");
      out.packLong(r.groupIdx());
    }
    if (r.locality() != null) {
      string("locality");
      string(r.locality());
    }
  }

  private static int present(Object value) {
    return value == null ? 0 : 1;
  }

  private void hashes(List<Long> values) throws IOException {
    out.packArrayHeader(values.size());
    for (long hash : values) {
      hash(hash);
    }
  }

  private void hashOrNil(Long hash) throws IOException {
    if (hash == null) {
      out.packNil();
    } else {
      hash(hash);
    }
  }

  private void hash(long hash) throws IOException {
    switch (hashes) {
      case SIGNED -> out.packLong(hash);
      case UINT64 -> {
        if (hash >= 0) {
          out.packLong(hash);
        } else {
          scratch[0] = (byte) 0xcf;
          bigEndian(hash, 1);
          out.writePayload(scratch, 0, 9);
        }
      }
      case BIN -> {
        out.packBinaryHeader(32);
        out.writePayload(ZEROS);
        bigEndian(hash, 0);
        out.writePayload(scratch, 0, 8);
      }
    }
  }

  private void bigEndian(long value, int at) {
    for (int i = 0; i < 8; i++) {
      scratch[at + i] = (byte) (value >>> (56 - 8 * i));
    }
  }

  private void tokens(List<Integer> tokens) throws IOException {
    out.packArrayHeader(tokens.size());
    for (int token : tokens) {
      out.packLong(token);
    }
  }

  private void extraKeys(List<List<ExtraKey>> perBlock) throws IOException {
    if (perBlock == null) {
      out.packNil();
      return;
    }
    out.packArrayHeader(perBlock.size());
    for (List<ExtraKey> keys : perBlock) {
      if (keys.isEmpty()) {
        out.packNil();
        continue;
      }
      out.packArrayHeader(keys.size());
      for (ExtraKey key : keys) {
        extraKey(key);
      }
    }
  }

  private void extraKey(ExtraKey key) throws IOException {
    if (key instanceof ExtraKey.Text text) {
      string(text.value());
    } else if (key instanceof ExtraKey.Multimodal mm) {
      out.packArrayHeader(2);
      string(mm.identifier());
      out.packLong(mm.offset());
    } else if (key instanceof ExtraKey.Digest digest) {
      byte[] bytes = digest.bytes();
      out.packBinaryHeader(bytes.length);
      out.writePayload(bytes);
    }
  }

  private void intOrNil(Integer value) throws IOException {
    if (value == null) {
      out.packNil();
    } else {
      out.packLong(value);
    }
  }

  private void stringOrNil(String value) throws IOException {
    if (value == null) {
      out.packNil();
    } else {
      string(value);
    }
  }

  private void string(String value) throws IOException {
    byte[] utf8 = value.getBytes(StandardCharsets.UTF_8);
    out.packRawStringHeader(utf8.length);
    out.writePayload(utf8);
  }
}
