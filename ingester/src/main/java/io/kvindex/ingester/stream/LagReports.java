package io.kvindex.ingester.stream;

import io.kvindex.index.StreamId;
import io.kvindex.ingester.IngesterMetrics.Operation;
import io.kvindex.ingester.Shared;
import io.kvindex.ingester.stream.Timers.Due;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A stream's lag reports: every {@link #EVERY} the worker reports in the index how far behind its
 * engine it is ({@link StreamLag}), so that routers do not take an error its lag explains for
 * drift; a worker stuck in a call reports nothing, which routers read as behind too. A report that
 * fails is counted and never fails ingest. Not thread-safe: the stream's worker thread uses it.
 */
final class LagReports {
  private static final Logger log = LoggerFactory.getLogger(StreamWorker.class);

  /** How often the stream reports its lag in the index. */
  static final Duration EVERY = Duration.ofSeconds(1);

  /** How long a report stands in the index. */
  static final Duration TTL = Duration.ofMinutes(1);

  private final Shared shared;
  private final StreamId id;
  private final Sequencer sequencer;
  private final StreamLag lag;
  private final Timers timers;
  private final String label;

  LagReports(
      Shared shared, StreamId id, Sequencer sequencer, StreamLag lag, Timers timers, String label) {
    this.shared = shared;
    this.id = id;
    this.sequencer = sequencer;
    this.lag = lag;
    this.timers = timers;
    this.label = label;
  }

  /** Reports in the index how far behind its engine the stream is, when a report is due. */
  void reportIfDue() {
    if (!timers.due(Due.LAG_REPORT)) {
      return;
    }
    long now = shared.nanos();
    timers.in(Due.LAG_REPORT, EVERY);
    Batch waiting = sequencer.oldestPending();
    long ms = lag.report(waiting == null ? Double.NaN : waiting.events().timestamp(), now);
    try {
      shared
          .index()
          .reportLagAsync(id, Duration.ofMillis(ms), TTL)
          .whenComplete(
              (done, e) -> {
                if (e != null || !done) {
                  shared.metrics().swallowed(Operation.LAG);
                }
              });
    } catch (RuntimeException e) {
      shared.metrics().realError(Operation.LAG);
      log.debug("{}: cannot report its lag: {}", label, e.toString());
    }
  }
}
