package io.kvindex.ingester.stream;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.KeyMode;
import io.kvindex.wire.EventMessage;
import io.kvindex.wire.KvEventDecoder;
import java.util.Arrays;
import java.util.List;

/**
 * One batch of a stream as it arrived (live or replayed), decoded once: a retry applies the same
 * decoded events. Immutable by convention (the payload array is shared, never changed); thread-safe
 * when so used.
 *
 * @param seq the publisher's sequence number
 * @param payloadHash a hash of the payload bytes, to tell a duplicate from a new batch
 * @param events the decoded batch; empty when the payload is malformed
 * @param malformed why the payload could not be decoded, or null
 * @param live whether it came from the live stream (else from the replay ring: history)
 * @param bytes what the decoded batch holds on the heap, as the memory budget counts it ({@link
 *     HeapBytes})
 */
public record Batch(
    long seq, int payloadHash, KvEventBatch events, String malformed, boolean live, long bytes) {

  private static final KvEventBatch NOTHING = KvEventBatch.of(0, List.of(), null);

  /**
   * Decodes a message's payload as a stream keyed in {@code mode} needs it: token ids only in token
   * mode (engine keys never read them, and they are most of a long prefill's bytes). A malformed
   * payload becomes an empty batch that says why.
   */
  public static Batch decode(EventMessage message, boolean live, KeyMode mode) {
    byte[] payload = message.payload();
    int hash = Arrays.hashCode(payload);
    try {
      KvEventBatch events =
          mode == KeyMode.TOKEN
              ? KvEventDecoder.decode(payload)
              : KvEventDecoder.decodeWithoutTokenIds(payload);
      return new Batch(message.seq(), hash, events, null, live, HeapBytes.of(events));
    } catch (RuntimeException e) {
      String why = e.getMessage();
      long bytes = HeapBytes.BATCH + HeapBytes.array(2, String.valueOf(why).length()) + 24;
      return new Batch(message.seq(), hash, NOTHING, why, live, bytes);
    }
  }

  /** Whether the batch carries an AllBlocksCleared (it applies as a purge first). */
  public boolean clears() {
    return events.events().stream().anyMatch(e -> e instanceof AllBlocksCleared);
  }

  /**
   * The batch as a replay's copy of one already applied is kept: its sequence and payload hash, to
   * compare with the batch applied, without its events, and counting only what such a record holds.
   */
  public Batch compared() {
    return new Batch(seq, payloadHash, NOTHING, malformed, live, HeapBytes.BATCH);
  }

  /** The same batch without its events: applied, it moves the watermark and changes nothing. */
  public Batch emptied() {
    return new Batch(seq, payloadHash, NOTHING, malformed, live, bytes);
  }
}
