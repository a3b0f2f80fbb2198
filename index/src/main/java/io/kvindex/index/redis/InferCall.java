package io.kvindex.index.redis;

import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;

/** infer.lua's and inferred.lua's calls: inferred evictions, touches and handovers. */
final class InferCall {
  private InferCall() {}

  /** Marks the pod's evictions inferred, for a cache of {@code capacity} blocks. */
  record Mark(String model, String pod, int capacity, long ttlMs) implements ScriptCall.Source {
    @Override
    public ScriptCall on(KeySchema keys) {
      return ScriptCall.of(Scripts.INFER, "mark")
          .key("infer", keys.inferred(model, pod))
          .arg("capacity", capacity)
          .arg("ttl_ms", ttlMs)
          .build();
    }
  }

  /** Whether the pod's evictions are inferred: the capacity marked. */
  record MarkState(String model, String pod) implements ScriptCall.Source {
    @Override
    public ScriptCall on(KeySchema keys) {
      return ScriptCall.of(Scripts.INFERRED, "state")
          .key("state", keys.inferred(model, pod))
          .build();
    }
  }

  /**
   * What a stream's owner leaves for its next owner.
   *
   * @param value {@code "<size>|"} then the removals, 8 bytes each
   */
  record HandOver(StreamId stream, byte[] value, long ttlMs) implements ScriptCall.Source {
    @Override
    public ScriptCall on(KeySchema keys) {
      return ScriptCall.of(Scripts.INFER, "handover")
          .key("handover", keys.handover(stream))
          .arg("value", value)
          .arg("ttl_ms", ttlMs)
          .build();
    }
  }

  /** The handover the stream's former owner left. */
  record HandoverState(StreamId stream) implements ScriptCall.Source {
    @Override
    public ScriptCall on(KeySchema keys) {
      return ScriptCall.of(Scripts.INFERRED, "state").key("state", keys.handover(stream)).build();
    }
  }

  /**
   * A router's touch of a pod's blocks.
   *
   * @param blockKeys the block keys, 8 bytes each
   * @param id the touch's id (8 bytes; its retries share it)
   */
  record Touch(
      String model,
      String pod,
      int rank,
      byte[] blockKeys,
      int errorBlocks,
      long ttlMs,
      byte[] id,
      int cachedBlocks)
      implements ScriptCall.Source {
    @Override
    public ScriptCall on(KeySchema keys) {
      return ScriptCall.of(Scripts.INFER, "touch")
          .key("touches", keys.touches(model, pod))
          .key("touch_state", keys.touchState(model, pod))
          .arg("rank", rank)
          .arg("block_keys", blockKeys)
          .arg("error_blocks", errorBlocks)
          .arg("max_entries", PrefixIndex.MAX_TOUCHES)
          .arg("ttl_ms", ttlMs)
          .arg("max_bytes", PrefixIndex.MAX_TOUCH_BYTES)
          .arg("overhead_bytes", PrefixIndex.TOUCH_OVERHEAD_BYTES)
          .arg("id", id)
          .arg("cached_blocks", cachedBlocks)
          .build();
    }
  }

  /** A stream's owner reads the touches of its rank after {@code cursor}. */
  record Read(StreamId stream, String cursor, int max) implements ScriptCall.Source {
    @Override
    public ScriptCall on(KeySchema keys) {
      return ScriptCall.of(Scripts.INFER, "read")
          .key("touches", keys.touches(stream.model(), stream.pod()))
          .key("touch_state", keys.touchState(stream.model(), stream.pod()))
          .arg("rank", stream.dpRank())
          .arg("cursor", Bytes.ascii(cursor))
          .arg("max_entries", max)
          .arg("max_bytes", PrefixIndex.MAX_TOUCH_READ_BYTES)
          .arg("reader_ttl_ms", PrefixIndex.TOUCH_READER_TTL.toMillis())
          .build();
    }
  }

  /** A stream's owner's first read: the id of the latest touch, its cursor from then on. */
  record Last(StreamId stream) implements ScriptCall.Source {
    @Override
    public ScriptCall on(KeySchema keys) {
      return ScriptCall.of(Scripts.INFER, "last")
          .key("touches", keys.touches(stream.model(), stream.pod()))
          .key("touch_state", keys.touchState(stream.model(), stream.pod()))
          .arg("rank", stream.dpRank())
          .arg("reader_ttl_ms", PrefixIndex.TOUCH_READER_TTL.toMillis())
          .build();
    }
  }
}
