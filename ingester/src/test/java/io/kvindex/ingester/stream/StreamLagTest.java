package io.kvindex.ingester.stream;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.event.KvEventBatch;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A stream's lag from the engine's times and this host's monotonic clock, given the time. */
class StreamLagTest {
  private static final long MS = 1_000_000L;

  /** This host's wall clock, ms: 200 s. */
  private static final long WALL = 200_000;

  private static KvEventBatch at(double seconds) {
    return KvEventBatch.of(seconds, List.of(), 0);
  }

  @Test
  void lag_engineTimeBehindTheNewestReceived_plusTheTimeSince() {
    StreamLag lag = new StreamLag(Duration.ofSeconds(1), () -> WALL);
    lag.received(at(100.0), 5_000 * MS);
    lag.received(at(103.0), 6_000 * MS);
    assertThat(lag.lagMillis(103.0, 6_000 * MS)).isZero();
    assertThat(lag.lagMillis(101.5, 6_200 * MS)).isEqualTo(1_700);
    assertThat(lag.lagMillis(0, 6_200 * MS)).as("no time: not judged").isZero();
  }

  @Test
  void lag_beforeTheFirstLiveBatch_byThisHostsWallClock() {
    StreamLag lag = new StreamLag(Duration.ofSeconds(1), () -> WALL);
    assertThat(lag.lagMillis(197.5, 0)).as("a batch replayed to a new owner").isEqualTo(2_500);
    lag.received(at(199.0), 0);
    assertThat(lag.lagMillis(197.5, 0)).isEqualTo(1_500);
  }

  @Test
  void lag_anEngineClockFarFromThisHosts_changesNothing() {
    StreamLag lag = new StreamLag(Duration.ofSeconds(1), () -> WALL);
    lag.received(at(1e9), 5_000 * MS); // an engine whose clock is decades ahead
    assertThat(lag.lagMillis(1e9, 5_010 * MS)).isEqualTo(10);
  }

  @Test
  void report_theWorstAppliedSinceTheLast_orTheOldestWaiting() {
    StreamLag lag = new StreamLag(Duration.ofSeconds(1), () -> WALL);
    lag.received(at(10.0), 0);
    lag.applied(9.0, 0);
    lag.applied(10.0, 0);
    assertThat(lag.report(Double.NaN, 0)).isEqualTo(1_000);
    assertThat(lag.report(Double.NaN, 0)).as("reset by the report").isZero();
    assertThat(lag.report(10.0, 300 * MS)).as("the oldest waiting").isEqualTo(300);
  }

  /**
   * A stream that falls behind for good is told so once its batches have been late for a stretch of
   * the engine's time as long as the limit; one late batch, or a backlog it catches up, is not.
   */
  @Test
  void applied_lateThroughAStretchAsLongAsTheLimit_cannotKeepUp() {
    StreamLag lag = new StreamLag(Duration.ofSeconds(2), () -> WALL);
    lag.received(at(100.0), 0);
    assertThat(lag.applied(97.0, 0)).as("late, alone").isFalse();
    assertThat(lag.applied(99.5, 0)).as("in time again").isFalse();
    for (int i = 0; i < 30; i++) {
      lag.received(at(100.0 + i * 0.1), i * 100 * MS);
    }
    assertThat(lag.applied(100.0, 2_900 * MS)).as("2.9 s late: a stretch starts").isFalse();
    assertThat(lag.applied(101.0, 3_900 * MS)).as("1 s of it").isFalse();
    assertThat(lag.applied(102.0, 4_000 * MS)).as("2 s of the engine's time, all late").isTrue();
    lag.forgive();
    assertThat(lag.applied(102.1, 4_200 * MS)).as("late, but a new stretch").isFalse();
  }
}
