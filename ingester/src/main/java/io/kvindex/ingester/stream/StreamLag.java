package io.kvindex.ingester.stream;

import io.kvindex.common.Check;
import io.kvindex.event.KvEventBatch;
import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * How far one stream is behind its engine, without comparing the clocks of two hosts: a batch's lag
 * is how much earlier the engine published it than the newest batch received live (the engine's own
 * times) plus how long ago that one was received (this host's monotonic clock). What waits in the
 * socket unread is not seen, so the figure is a floor. Before the first live batch (a new owner
 * catching up from the ring) there is nothing to measure against but this host's wall clock, which
 * stands in. The stream's owner reports it for routers and, while it infers evictions, stops
 * inferring when it stays behind. Pure, given the time. Not thread-safe: the stream's worker feeds
 * it.
 */
final class StreamLag {
  private final long limitMillis;
  private final LongSupplier wallMillis;
  private double newestTs = Double.NaN;
  private long newestAt;
  private long worstSinceReport;
  private double behindSinceTs = Double.NaN;

  /**
   * @param limit the lag past which a stream that stays behind cannot keep up (see {@link
   *     #applied})
   */
  StreamLag(Duration limit, LongSupplier wallMillis) {
    this.limitMillis = Check.atLeastOneMilli(limit, "limit").toMillis();
    this.wallMillis = wallMillis;
  }

  /** A live batch arrived at {@code nanos}. */
  void received(KvEventBatch batch, long nanos) {
    double ts = batch.timestamp();
    if (ts > 0 && !(ts < newestTs)) {
      newestTs = ts;
      newestAt = nanos;
    }
  }

  /** How far behind its engine a batch it published at {@code ts} (seconds) is at {@code nanos}. */
  long lagMillis(double ts, long nanos) {
    if (!(ts > 0)) {
      return 0;
    }
    if (Double.isNaN(newestTs)) {
      return Math.max(0, wallMillis.getAsLong() - Math.round(ts * 1000));
    }
    long engine = Math.round((newestTs - ts) * 1000);
    return Math.max(0, engine + (nanos - newestAt) / 1_000_000);
  }

  /**
   * A batch the engine published at {@code ts} was applied at {@code nanos}. Returns true when the
   * stream cannot keep up: its batches applied at least {@code limit} late, without one in time,
   * over a stretch of at least {@code limit} of the engine's own time.
   */
  boolean applied(double ts, long nanos) {
    long lag = lagMillis(ts, nanos);
    worstSinceReport = Math.max(worstSinceReport, lag);
    if (lag < limitMillis) {
      behindSinceTs = Double.NaN;
      return false;
    }
    if (Double.isNaN(behindSinceTs)) {
      behindSinceTs = ts;
    }
    return (ts - behindSinceTs) * 1000 >= limitMillis;
  }

  /**
   * The lag to report at {@code nanos}: the worst of the batches applied since the last report, or
   * that of the oldest one waiting ({@code waitingTs}, NaN when none waits) if it is worse.
   */
  long report(double waitingTs, long nanos) {
    long lag =
        Math.max(worstSinceReport, Double.isNaN(waitingTs) ? 0 : lagMillis(waitingTs, nanos));
    worstSinceReport = 0;
    return lag;
  }

  /** The stream stopped being judged behind (it stopped inferring): a new stretch starts. */
  void forgive() {
    behindSinceTs = Double.NaN;
  }
}
