package io.kvindex.ingester.lease;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.ingester.lease.Holding.Event;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

/** Every transition of a held stream's life cycle: each state under each event. */
class HoldingTest {

  @ParameterizedTest(name = "{0} on {1} -> {2}")
  @CsvSource({
    "RUNNING,             POD_LEFT,           RETIRING",
    "RUNNING,             NEW_INCARNATION,    REPLACING",
    "RUNNING,             STOP,               STOPPING",
    "RUNNING,             STOP_KEEPING_LEASE, STOPPING_LEASE_KEPT",
    // a retiring stream is purged and stopped whatever else happens to its pod
    "RETIRING,            POD_LEFT,           RETIRING",
    "RETIRING,            NEW_INCARNATION,    RETIRING",
    "RETIRING,            STOP,               STOPPING",
    "RETIRING,            STOP_KEEPING_LEASE, STOPPING_LEASE_KEPT",
    // a replacing stream whose pod leaves retires instead
    "REPLACING,           POD_LEFT,           RETIRING",
    "REPLACING,           NEW_INCARNATION,    REPLACING",
    "REPLACING,           STOP,               STOPPING",
    "REPLACING,           STOP_KEEPING_LEASE, STOPPING_LEASE_KEPT",
    "STOPPING,            POD_LEFT,           STOPPING",
    "STOPPING,            NEW_INCARNATION,    STOPPING",
    "STOPPING,            STOP,               STOPPING",
    "STOPPING,            STOP_KEEPING_LEASE, STOPPING_LEASE_KEPT",
    // a lease once kept is never released by a later stop
    "STOPPING_LEASE_KEPT, POD_LEFT,           STOPPING_LEASE_KEPT",
    "STOPPING_LEASE_KEPT, NEW_INCARNATION,    STOPPING_LEASE_KEPT",
    "STOPPING_LEASE_KEPT, STOP,               STOPPING_LEASE_KEPT",
    "STOPPING_LEASE_KEPT, STOP_KEEPING_LEASE, STOPPING_LEASE_KEPT",
  })
  void on_movesTheLifeCycle(Holding from, Event event, Holding to) {
    assertThat(from.on(event)).isEqualTo(to);
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Holding.class)
  void counted_onlyWhatTheReplicaKeepsOwning(Holding state) {
    assertThat(state.counted()).isEqualTo(state == Holding.RUNNING || state == Holding.REPLACING);
  }
}
