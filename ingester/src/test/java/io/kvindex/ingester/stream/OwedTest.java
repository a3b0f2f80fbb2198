package io.kvindex.ingester.stream;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.ingester.stream.Owed.Event;
import java.util.Arrays;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

/** Every transition of what a stream owes to read from its ring: each state under each event. */
class OwedTest {

  @ParameterizedTest(name = "{0} on {1} -> {2}")
  @CsvSource({
    // a reconnect owes the check now; history owed stays owed
    "NOTHING,                             RECONNECTED,  RECONNECT_CHECK",
    "RECONNECT_CHECK,                     RECONNECTED,  RECONNECT_CHECK",
    "RECONNECT_CHECK_AT_LIVE,             RECONNECTED,  RECONNECT_CHECK",
    "HISTORY,                             RECONNECTED,  RECONNECT_CHECK_AND_HISTORY",
    "RECONNECT_CHECK_AND_HISTORY,         RECONNECTED,  RECONNECT_CHECK_AND_HISTORY",
    "RECONNECT_CHECK_AT_LIVE_AND_HISTORY, RECONNECTED,  RECONNECT_CHECK_AND_HISTORY",
    // the check that compared (or cannot be made, or was made again at a live batch) settles it
    "NOTHING,                             CHECKED,      NOTHING",
    "RECONNECT_CHECK,                     CHECKED,      NOTHING",
    "RECONNECT_CHECK_AT_LIVE,             CHECKED,      NOTHING",
    "HISTORY,                             CHECKED,      HISTORY",
    "RECONNECT_CHECK_AND_HISTORY,         CHECKED,      HISTORY",
    "RECONNECT_CHECK_AT_LIVE_AND_HISTORY, CHECKED,      HISTORY",
    // a check with nothing to compare is made again before the next live batch
    "NOTHING,                             INCONCLUSIVE, NOTHING",
    "RECONNECT_CHECK,                     INCONCLUSIVE, RECONNECT_CHECK_AT_LIVE",
    "RECONNECT_CHECK_AT_LIVE,             INCONCLUSIVE, RECONNECT_CHECK_AT_LIVE",
    "HISTORY,                             INCONCLUSIVE, HISTORY",
    "RECONNECT_CHECK_AND_HISTORY,         INCONCLUSIVE, RECONNECT_CHECK_AT_LIVE_AND_HISTORY",
    "RECONNECT_CHECK_AT_LIVE_AND_HISTORY, INCONCLUSIVE, RECONNECT_CHECK_AT_LIVE_AND_HISTORY",
    // a replay cut at its window owes history; a check owed stays owed
    "NOTHING,                             HISTORY_CUT,  HISTORY",
    "RECONNECT_CHECK,                     HISTORY_CUT,  RECONNECT_CHECK_AND_HISTORY",
    "RECONNECT_CHECK_AT_LIVE,             HISTORY_CUT,  RECONNECT_CHECK_AT_LIVE_AND_HISTORY",
    "HISTORY,                             HISTORY_CUT,  HISTORY",
    "RECONNECT_CHECK_AND_HISTORY,         HISTORY_CUT,  RECONNECT_CHECK_AND_HISTORY",
    "RECONNECT_CHECK_AT_LIVE_AND_HISTORY, HISTORY_CUT,  RECONNECT_CHECK_AT_LIVE_AND_HISTORY",
    // a replay read through pays the history
    "NOTHING,                             HISTORY_READ, NOTHING",
    "RECONNECT_CHECK,                     HISTORY_READ, RECONNECT_CHECK",
    "RECONNECT_CHECK_AT_LIVE,             HISTORY_READ, RECONNECT_CHECK_AT_LIVE",
    "HISTORY,                             HISTORY_READ, NOTHING",
    "RECONNECT_CHECK_AND_HISTORY,         HISTORY_READ, RECONNECT_CHECK",
    "RECONNECT_CHECK_AT_LIVE_AND_HISTORY, HISTORY_READ, RECONNECT_CHECK_AT_LIVE",
  })
  void on_movesWhatIsOwed(Owed from, Event event, Owed to) {
    assertThat(from.on(event)).isEqualTo(to);
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Owed.class)
  void queries_sayWhichDebtIsOwed(Owed state) {
    Set<Owed> now = Set.of(Owed.RECONNECT_CHECK, Owed.RECONNECT_CHECK_AND_HISTORY);
    Set<Owed> atLive =
        Set.of(Owed.RECONNECT_CHECK_AT_LIVE, Owed.RECONNECT_CHECK_AT_LIVE_AND_HISTORY);
    assertThat(state.reconnectCheck()).isEqualTo(now.contains(state));
    assertThat(state.reconnectCheckRetried()).isEqualTo(atLive.contains(state));
    assertThat(state.reconnectCheckBeforeLive())
        .isEqualTo(now.contains(state) || atLive.contains(state));
    assertThat(state.history())
        .isEqualTo(
            Set.of(
                    Owed.HISTORY,
                    Owed.RECONNECT_CHECK_AND_HISTORY,
                    Owed.RECONNECT_CHECK_AT_LIVE_AND_HISTORY)
                .contains(state));
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Owed.class)
  void everyState_isReachableFromAFreshStream(Owed state) {
    Set<Owed> reached = Set.of(Owed.NOTHING);
    for (int round = 0; round < Owed.values().length; round++) {
      reached =
          reached.stream()
              .flatMap(r -> Arrays.stream(Event.values()).map(r::on))
              .collect(Collectors.toSet());
    }
    assertThat(reached).contains(state);
  }
}
