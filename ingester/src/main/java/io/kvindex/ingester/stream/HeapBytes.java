package io.kvindex.ingester.stream;

import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.ExtraKey;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import java.util.List;

/**
 * What a decoded batch holds on the heap, as the memory budget counts it: its objects and arrays at
 * the sizes a 64-bit JVM with compressed references gives them (12-byte headers, 4-byte references,
 * 8-byte alignment), rounded up, plus what a stream's pending map spends on an entry. An estimate
 * that errs high. Thread-safe (stateless).
 */
final class HeapBytes {
  /** The {@link Batch} record, and the pending map's entry and boxed key that hold it. */
  static final long BATCH = 48 + 64;

  private static final long EVENT_BATCH = 32;
  private static final long STORED = 72;
  private static final long REMOVED = 24;
  private static final long LIST = 16;
  private static final long BOXED = 16;

  private HeapBytes() {}

  /** The estimate for a batch held with these events. */
  static long of(KvEventBatch events) {
    long bytes = BATCH + EVENT_BATCH + LIST + array(4, events.events().size());
    for (KvEvent e : events.events()) {
      bytes += of(e);
    }
    for (String tag : events.skippedTags()) {
      bytes += string(tag) + 4;
    }
    return bytes;
  }

  private static long of(KvEvent event) {
    if (event instanceof BlockStored s) {
      long bytes = STORED + LIST + array(8, s.blockHashes().size());
      if (!s.tokenIds().isEmpty()) {
        bytes += LIST + array(4, s.tokenIds().size());
      }
      bytes += boxed(s.parentBlockHash()) + boxed(s.loraId()) + boxed(s.groupIdx());
      bytes += boxed(s.kvCacheSpecSlidingWindow());
      bytes += string(s.medium()) + string(s.loraName()) + string(s.kvCacheSpecKind());
      bytes += string(s.locality()) + string(s.ownership()) + string(s.sessionId());
      return bytes + extraKeys(s.extraKeys());
    }
    if (event instanceof BlockRemoved r) {
      return REMOVED
          + LIST
          + array(8, r.blockHashes().size())
          + string(r.medium())
          + boxed(r.groupIdx());
    }
    return 0; // AllBlocksCleared: one shared instance
  }

  private static long extraKeys(List<List<ExtraKey>> keys) {
    if (keys == null) {
      return 0;
    }
    long bytes = LIST + array(4, keys.size());
    for (List<ExtraKey> block : keys) {
      bytes += LIST + array(4, block.size());
      for (ExtraKey k : block) {
        bytes += 24;
        if (k instanceof ExtraKey.Text t) {
          bytes += string(t.value());
        } else if (k instanceof ExtraKey.Multimodal m) {
          bytes += string(m.identifier());
        } else if (k instanceof ExtraKey.Digest d) {
          bytes += array(1, d.bytes().length);
        }
      }
    }
    return bytes;
  }

  /** An array of {@code n} elements of {@code width} bytes: a 16-byte header, then the elements. */
  static long array(int width, long n) {
    return align(16 + width * n);
  }

  private static long string(String s) {
    return s == null ? 0 : 24 + array(1, s.length() * 2L); // the worst case: UTF-16
  }

  private static long boxed(Object o) {
    return o == null ? 0 : BOXED;
  }

  private static long align(long bytes) {
    return (bytes + 7) & ~7L;
  }
}
