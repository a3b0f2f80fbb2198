package io.kvindex.ingester.stream;

import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.KeyMode;
import io.kvindex.index.StreamId;
import io.kvindex.ingester.Shared;
import io.kvindex.wire.EventMessage;
import io.kvindex.wire.KvEventDecoder;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a stream does with each message it takes in, live or replayed, before its sequencer sees it:
 * decodes it once, hands a well-formed batch to the key check and the layout learner (neither ever
 * fails ingest), and counts and logs what it cannot read or hold. Not thread-safe: the stream's
 * worker thread calls it.
 */
final class BatchIntake {
  private static final Logger log = LoggerFactory.getLogger(StreamWorker.class);

  /** How often a stream that drops live batches says so, at most. */
  static final Duration DROP_LOG_INTERVAL = Duration.ofSeconds(10);

  private final Shared shared;
  private final StreamId id;
  private final KeyMode mode;
  private final String label;
  private final Sequencer sequencer;
  private long droppedSinceLog;
  private long dropLoggedNanos;

  BatchIntake(Shared shared, StreamId id, KeyMode mode, String label, Sequencer sequencer) {
    this.shared = shared;
    this.id = id;
    this.mode = mode;
    this.label = label;
    this.sequencer = sequencer;
  }

  /**
   * A live batch the stream could not hold (its own bounds, or the process's memory budget): the
   * gap it leaves is replayed later. Counted; logged at most every 10 s.
   */
  void dropped(Batch batch, String reason) {
    shared.metrics().dropped(reason);
    droppedSinceLog++;
    long now = shared.nanos();
    if (droppedSinceLog == 1 || now - dropLoggedNanos > DROP_LOG_INTERVAL.toNanos()) {
      log.warn(
          "{}: live batch {} dropped ({}: {} bytes waiting, the process holds {} of its {}-byte"
              + " memory budget); {} dropped since the last line, replayed later as a gap",
          label,
          batch.seq(),
          reason,
          sequencer.pendingBytes(),
          shared.memory().used(),
          shared.memory().total(),
          droppedSinceLog);
      dropLoggedNanos = now;
      droppedSinceLog = 0;
    }
  }

  Batch decoded(EventMessage message, boolean live) {
    Batch batch = Batch.decode(message, live, mode);
    if (batch.malformed() != null) {
      malformed(batch);
    } else {
      learnFrom(message, batch);
    }
    return batch;
  }

  /** What a well-formed batch, live or replayed, teaches: the engines' keys and cache groups. */
  void learnFrom(EventMessage message, Batch batch) {
    checkKeys(message, batch);
    learnLayout(batch);
  }

  /**
   * Hands the batch to the key check when the check is due for the model and the batch has a store
   * that starts a chain (the only kind it can recompute). Engine-keyed batches are decoded without
   * their token ids, so such a batch is decoded again with them, at most once per check. Never
   * fails ingest.
   */
  private void checkKeys(EventMessage message, Batch batch) {
    try {
      if (!shared.keyChecks().due(id.model()) || !startsAChain(batch.events())) {
        return;
      }
      KvEventBatch events =
          mode == KeyMode.TOKEN ? batch.events() : KvEventDecoder.decode(message.payload());
      shared.keyChecks().sample(id.model(), mode, events);
    } catch (RuntimeException e) {
      log.warn("{}: the key check failed on batch {}; ingest goes on", label, batch.seq(), e);
    }
  }

  /** Hands the batch's stores to the layout learner; never fails ingest. */
  private void learnLayout(Batch batch) {
    try {
      shared.layouts().observe(id.model(), batch.events());
    } catch (RuntimeException e) {
      log.warn(
          "{}: learning the cache groups failed on batch {}; ingest goes on",
          label,
          batch.seq(),
          e);
    }
  }

  private static boolean startsAChain(KvEventBatch events) {
    for (KvEvent event : events.events()) {
      if (event instanceof BlockStored store && store.parentBlockHash() == null) {
        return true;
      }
    }
    return false;
  }

  void malformed(Batch batch) {
    shared.metrics().malformed();
    log.warn(
        "{}: batch {} ({}) cannot be read: {}",
        label,
        batch.seq(),
        batch.live() ? "live; its replay copy is tried next" : "replayed",
        batch.malformed());
  }
}
