package io.kvindex.ingester.stream;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.ingester.stream.Rebuild.Event;
import java.util.Arrays;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

/** Every transition of a stream's rebuild life cycle: each state under each event. */
class RebuildTest {

  @ParameterizedTest(name = "{0} on {1} -> {2}")
  @CsvSource({
    // a start sets the state whatever it was
    "SHOWN,                   STARTED_AT_WATERMARK, SHOWN",
    "STAGED_HISTORY_OWED,     STARTED_AT_WATERMARK, SHOWN",
    "SHOWN,                   STARTED_NEW,          REBUILDING",
    "STAGED,                  STARTED_NEW,          REBUILDING",
    "SHOWN,                   STARTED_TAKEN_OVER,   STAGED_HISTORY_OWED",
    "REBUILDING,              STARTED_TAKEN_OVER,   STAGED_HISTORY_OWED",
    // a purge that forgot the watermark starts a rebuild; owed history stays owed
    "SHOWN,                   WATERMARK_FORGOTTEN,  REBUILDING",
    "SHOWN_HISTORY_OWED,      WATERMARK_FORGOTTEN,  REBUILDING_HISTORY_OWED",
    "REBUILDING,              WATERMARK_FORGOTTEN,  REBUILDING",
    "REBUILDING_HISTORY_OWED, WATERMARK_FORGOTTEN,  REBUILDING_HISTORY_OWED",
    "STAGED,                  WATERMARK_FORGOTTEN,  REBUILDING",
    "STAGED_HISTORY_OWED,     WATERMARK_FORGOTTEN,  REBUILDING_HISTORY_OWED",
    // an applied batch is staged only while rebuilding
    "SHOWN,                   APPLIED,              SHOWN",
    "SHOWN_HISTORY_OWED,      APPLIED,              SHOWN_HISTORY_OWED",
    "REBUILDING,              APPLIED,              STAGED",
    "REBUILDING_HISTORY_OWED, APPLIED,              STAGED_HISTORY_OWED",
    "STAGED,                  APPLIED,              STAGED",
    "STAGED_HISTORY_OWED,     APPLIED,              STAGED_HISTORY_OWED",
    // published: shown, whatever was staged; owed history stays owed
    "SHOWN,                   PUBLISHED,            SHOWN",
    "SHOWN_HISTORY_OWED,      PUBLISHED,            SHOWN_HISTORY_OWED",
    "REBUILDING,              PUBLISHED,            SHOWN",
    "REBUILDING_HISTORY_OWED, PUBLISHED,            SHOWN_HISTORY_OWED",
    "STAGED,                  PUBLISHED,            SHOWN",
    "STAGED_HISTORY_OWED,     PUBLISHED,            SHOWN_HISTORY_OWED",
    // a replay cut at its window owes history, in any phase
    "SHOWN,                   HISTORY_CUT,          SHOWN_HISTORY_OWED",
    "SHOWN_HISTORY_OWED,      HISTORY_CUT,          SHOWN_HISTORY_OWED",
    "REBUILDING,              HISTORY_CUT,          REBUILDING_HISTORY_OWED",
    "REBUILDING_HISTORY_OWED, HISTORY_CUT,          REBUILDING_HISTORY_OWED",
    "STAGED,                  HISTORY_CUT,          STAGED_HISTORY_OWED",
    "STAGED_HISTORY_OWED,     HISTORY_CUT,          STAGED_HISTORY_OWED",
    // a catch-up's answer pays it, in any phase
    "SHOWN,                   CAUGHT_UP,            SHOWN",
    "SHOWN_HISTORY_OWED,      CAUGHT_UP,            SHOWN",
    "REBUILDING,              CAUGHT_UP,            REBUILDING",
    "REBUILDING_HISTORY_OWED, CAUGHT_UP,            REBUILDING",
    "STAGED,                  CAUGHT_UP,            STAGED",
    "STAGED_HISTORY_OWED,     CAUGHT_UP,            STAGED",
  })
  void on_movesTheLifeCycle(Rebuild from, Event event, Rebuild to) {
    assertThat(from.on(event)).isEqualTo(to);
  }

  @ParameterizedTest(name = "{0} under every event")
  @EnumSource(Rebuild.class)
  void on_everyEventLeadsToAState(Rebuild from) {
    for (Event e : Event.values()) {
      assertThat(from.on(e)).as("%s on %s", from, e).isNotNull();
    }
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Rebuild.class)
  void queries_stageWhileRebuildingAndPublishOnlyStagedWithNothingOwed(Rebuild state) {
    Set<Rebuild> staging =
        Set.of(
            Rebuild.REBUILDING,
            Rebuild.REBUILDING_HISTORY_OWED,
            Rebuild.STAGED,
            Rebuild.STAGED_HISTORY_OWED);
    assertThat(state.staging()).isEqualTo(staging.contains(state));
    assertThat(state.mayPublish()).isEqualTo(state == Rebuild.STAGED);
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Rebuild.class)
  void everyState_isReachableFromAFreshStream(Rebuild state) {
    Set<Rebuild> reached = Set.of(Rebuild.SHOWN);
    for (int round = 0; round < Rebuild.values().length; round++) {
      reached =
          reached.stream()
              .flatMap(r -> Arrays.stream(Event.values()).map(r::on))
              .collect(Collectors.toSet());
    }
    assertThat(reached).contains(state);
  }
}
