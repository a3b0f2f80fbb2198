package io.kvindex.ingester.stream;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.ApplyResult;
import io.kvindex.index.ApplyStatus;
import io.kvindex.index.KeyMode;
import io.kvindex.index.PurgeMode;
import io.kvindex.index.PurgeStatus;
import io.kvindex.ingester.stream.Action.Apply;
import io.kvindex.ingester.stream.Action.RepairGap;
import io.kvindex.ingester.stream.Action.RunPurge;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every ordering case of one stream, without sockets, Redis or a clock. Each case is a script of
 * steps and the transcript of what the sequencer said: {@code start W} (the index's watermark, -1
 * for none), {@code live S} (a live batch; {@code S#H} gives its payload another hash), {@code
 * next} (the action it asks for), {@code applied STATUS [W]} and {@code purged STATUS} (what Redis
 * answered to the action just asked for), {@code replay S,S.. end|open} or {@code replay none
 * end|open} and {@code noreplay} (a gap's repair), {@code request R} (a purge asked for), {@code
 * drift} (a router's resync request), {@code restart} (a new incarnation seen), {@code catchup
 * S,S..} (an idle stream's replay).
 */
class SequencerTest {

  static Stream<Arguments> cases() {
    return Stream.of(
        row("first batch of a new stream", "start -1; live 0; next", "queued; apply 0 staged"),
        row(
            "any first sequence starts a new stream",
            "start -1; live 0; next",
            "queued; apply 0 staged"),
        row("in order after the watermark", "start 4; live 5; next", "queued; apply 5"),
        row(
            "applied batches advance",
            "start 4; live 5; live 6; next; applied APPLIED; next; applied APPLIED; next",
            "queued; queued; apply 5; apply 6; idle"),
        row("a gap asks for a replay", "start 4; live 7; next", "queued; repair 5..6"),
        row(
            "a second copy of a waiting batch is a duplicate",
            "start 4; live 7; live 7; next",
            "queued; duplicate; repair 5..6"),
        row(
            "a replay that covers the gap",
            "start 4; live 7; next; replay 5,6 end; next",
            "queued; repair 5..6; covered; apply 5"),
        row(
            "a replay that covers it but goes silent",
            "start 4; live 7; next; replay 5,6 open; next",
            "queued; repair 5..6; partial; apply 5"),
        row(
            "an empty replay purges and goes on from the live batch",
            "start 4; live 7; next; replay none end; next; purged PURGED; next",
            "queued; repair 5..6; empty; purge gap_replay_failed reset from 7; apply 7 staged"),
        row(
            "a silent replay purges too",
            "start 4; live 7; next; replay none open; next",
            "queued; repair 5..6; silent; purge gap_replay_failed reset from 7"),
        row(
            "a replay beyond its ring purges and goes on from the oldest it holds",
            "start 4; live 9; next; replay 6,7,8 end; next; purged PURGED; next",
            "queued; repair 5..8; beyond_ring; purge gap_beyond_ring reset from 6; apply 6 staged"),
        row(
            "no replay endpoint purges and goes on from the live batch",
            "start 4; live 7; next; noreplay; next",
            "queued; repair 5..6; absent; purge gap_no_replay reset from 7"),
        row(
            "a new stream whose ring lost its start just begins later",
            "start -1; live 9; next; replay 6,7,8 end; next",
            "queued; repair 0..8; beyond_ring; apply 6 staged"),
        row(
            "a new stream without replay begins at the live batch",
            "start -1; live 9; next; noreplay; next",
            "queued; repair 0..8; absent; apply 9 staged"),
        row(
            "an unreadable live batch is asked for again; the ring's copy applies",
            "start 4; live 5!; next; replay 5,6 end; next",
            "queued; refetch 5; covered; apply 5"),
        row(
            "unreadable in the ring too: purged, going on after it",
            "start 4; live 5!; live 6; next; replay 5!,6 end; next; purged PURGED; next",
            "queued; queued; refetch 5; covered; purge malformed_batch reset from 6; apply 6 staged"),
        row(
            "an unreadable batch and no replay endpoint: purged, going on after it",
            "start 4; live 5!; next; noreplay; next",
            "queued; refetch 5; absent; purge malformed_batch reset from 6"),
        row(
            "an unreadable first batch of a new stream is just passed",
            "start -1; live 0!; next; noreplay; next",
            "queued; refetch 0; absent; idle"),
        row(
            "an unreadable replayed batch is not asked for again",
            "start 4; live 7; next; replay 5!,6 end; next",
            "queued; repair 5..6; covered; purge malformed_batch reset from 6"),
        row(
            "a replay too large to hold: purged, going on from live",
            "start 4; live 7; next; toolarge; next",
            "queued; repair 5..6; too_large; purge replay_too_large reset from 7"),
        row(
            "a batch the index can never apply: purged, going on after it",
            "start 4; live 5; live 6; next; rejected; next; purged PURGED; next",
            "queued; queued; apply 5; purge batch_rejected reset from 6; apply 6 staged"),
        row(
            "an unreadable batch while asleep changes nothing anyway",
            "start 4; live 5; sleep; next; purged PURGED; catchup 5!; next",
            "queued; purge sleep keep; apply 5 without events"),
        row(
            "a new stream's replayed history and the live batches queued meanwhile are staged, then"
                + " shown together",
            "start -1; live 3; next; replay 0,1,2 end; next; applied APPLIED; next;"
                + " applied APPLIED; next; applied APPLIED; next; applied APPLIED; next",
            "queued; repair 0..2; covered; apply 0 staged; apply 1 staged; apply 2 staged;"
                + " apply 3 staged; publish"),
        row(
            "a quiet pod's rebuilt history is published once applied",
            "start -1; catchup 0,1; next; applied APPLIED; next; applied APPLIED; next;"
                + " published PURGED; next",
            "apply 0 staged; apply 1 staged; publish; idle"),
        row(
            "an owner taking over a rebuild asks the replay for the rest before it publishes",
            "start 4 staged; next; catchup 5,6; next; applied APPLIED; next; applied APPLIED; next;"
                + " published PURGED; next",
            "idle; apply 5 staged; apply 6 staged; publish; idle"),
        row(
            "a rebuild is not shown while live batches it had no room for are still missing",
            "start -1; catchup 0; live 1; live 2; live 3; live 4; next; applied APPLIED; next;"
                + " applied APPLIED; next; applied APPLIED; next; applied APPLIED; next; catchup 4;"
                + " next; applied APPLIED; next",
            "queued; queued; queued; dropped; apply 0 staged; apply 1 staged; apply 2 staged;"
                + " apply 3 staged; idle; apply 4 staged; publish"),
        row(
            "after a restart seen in the engine's metrics, the new process's batches show the stream",
            "start 4; live 5; next; applied APPLIED; restart; next; purged PURGED; live 0; next;"
                + " applied APPLIED; next",
            "queued; apply 5; purge engine_restart reset from 0; queued; apply 0 staged; publish"),
        row(
            "a rebuild taken over whose replay has nothing newer publishes",
            "start 4 staged; next; catchup none; next",
            "idle; publish"),
        row(
            "after the index is lost, the history replayed is staged",
            "start 4; lost; next; purged PURGED; catchup 0,1; next; applied APPLIED; next;"
                + " applied APPLIED; next; published SWALLOWED; next; published PURGED; next",
            "purge index_reset reset from 0; apply 0 staged; apply 1 staged; publish; publish;"
                + " idle"),
        row(
            "a batch sent twice is a duplicate",
            "start 4; live 5; next; applied APPLIED; live 5; next",
            "queued; apply 5; duplicate; idle"),
        row(
            "an old sequence with a new payload is an engine restart",
            "start 4; live 5; next; applied APPLIED; live 0#99; next; purged PURGED; next",
            "queued; apply 5; restart; purge engine_restart reset from 0; apply 0 staged"),
        row(
            "a restart below a watermark never applied here",
            "start 40; live 3; next; purged PURGED; next",
            "restart; purge engine_restart reset from 0; repair 0..2"),
        row(
            "a restart drops what the old engine left pending",
            "start 4; live 7; restart; next; purged PURGED; next",
            "queued; purge engine_restart reset from 0; idle"),
        row(
            "a purge comes before anything else",
            "start 4; live 5; request sleep; next; purged PURGED; next",
            "queued; purge sleep keep; apply 5"),
        row(
            "one pending purge is enough",
            "start 4; request sleep; request unreachable; next; purged PURGED; next",
            "purge sleep keep; idle"),
        row(
            "a purge that met a temporary error stays pending",
            "start 4; request sleep; next; purged SWALLOWED; next",
            "purge sleep keep; purge sleep keep"),
        row(
            "a swallowed apply is tried again",
            "start 4; live 5; next; applied SWALLOWED; next",
            "queued; apply 5; apply 5"),
        row(
            "a lost reply comes back DUPLICATE and the batch is dropped",
            "start 4; live 5; next; applied DUPLICATE 5; next",
            "queued; apply 5; idle"),
        row(
            "an index behind this worker answers GAP and the gap is replayed",
            "start 4; live 5; next; applied GAP 2; next",
            "queued; apply 5; repair 3..4"),
        row(
            "an idle stream catches up in order",
            "start 4; catchup 5,6; next; applied APPLIED; next",
            "apply 5; apply 6"),
        row(
            "a catch-up ignores what is already applied",
            "start 4; catchup 3,4,5; next",
            "apply 5"),
        row(
            "a late live copy of a replayed batch is no restart",
            "start -1; live 0; next; applied APPLIED; live 3; next; replay 1,2,3,4 end; next;"
                + " applied APPLIED; next; applied APPLIED; next; applied APPLIED; next;"
                + " applied APPLIED; live 4",
            "queued; apply 0 staged; queued; repair 1..2; covered; apply 1 staged; apply 2 staged;"
                + " apply 3 staged; apply 4 staged; duplicate"),
        row(
            "a sleeping engine is purged",
            "start 4; sleep; next; purged PURGED; next",
            "purge sleep keep; idle"),
        row(
            "while asleep, a catch-up adds nothing",
            "start 4; sleep; next; purged PURGED; catchup 5,6; next; applied APPLIED; next",
            "purge sleep keep; apply 5 without events; apply 6 without events"),
        row(
            "while asleep, batches buffered before the sleep add nothing",
            "start 4; live 6; sleep; next; purged PURGED; next; replay 5 end; next; applied"
                + " APPLIED; next",
            "queued; purge sleep keep; repair 5..5; covered; apply 5 without events;"
                + " apply 6 without events"),
        row(
            "a live batch newer than the sleep shows the engine awake",
            "start 4; sleep; next; purged PURGED; live 5; next",
            "purge sleep keep; queued; apply 5"),
        row(
            "once awake, batches apply again",
            "start 4; sleep; next; purged PURGED; wake; catchup 5; next",
            "purge sleep keep; apply 5"),
        row(
            "a lost index purges and replays from 0, keeping what waits",
            "start 40; live 41; lost; next; purged PURGED; next",
            "queued; purge index_reset reset from 0; repair 0..40"),
        row(
            "a drift resync purges and applies again what the ring still covers",
            "start 40; live 41; drift; next; purged PURGED; next; replay 30,31 end; next",
            "queued; purge drift reset from 0; repair 0..40; beyond_ring; apply 30 staged"),
        row(
            "a quiet stream's resync catches up from the ring's oldest batch",
            "start 40; drift; next; purged PURGED; next; catchup 35,36; next; replay 35,36 end;"
                + " next",
            "purge drift reset from 0; idle; repair 0..34; beyond_ring; apply 35 staged"),
        row(
            "a resync during an engine restart's purge changes nothing",
            "start 4; live 5; next; applied APPLIED; live 0#99; drift; next",
            "queued; apply 5; restart; purge engine_restart reset from 0"),
        row(
            "a resync replaces a pending purge that keeps the watermark",
            "start 4; request unreachable; drift; next",
            "purge drift reset from 0"),
        row(
            "a resync that met a temporary error stays pending",
            "start 4; drift; next; purged SWALLOWED; next",
            "purge drift reset from 0; purge drift reset from 0"));
  }

  private static Arguments row(String name, String steps, String transcript) {
    return Arguments.of(name, steps, transcript);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void sequencer_followsTheOrderingRules(String name, String steps, String transcript) {
    assertThat(new Drive(4).run(steps)).isEqualTo(transcript);
  }

  static Stream<Arguments> backlogCases() {
    return Stream.of(
        row(
            "a backlog is applied as one",
            "start 4; live 5; live 6; live 7; next; applied APPLIED; next",
            "queued; queued; queued; apply 5..7 (3 events); idle"),
        row(
            "as many as fit one apply call",
            "start 4; live 5; live 6; live 7; live 8; live 9; next; applied APPLIED; next",
            "queued; queued; queued; queued; queued; apply 5..8 (4 events); apply 9"),
        row(
            "a gap ends the run",
            "start 4; live 5; live 6; live 8; next; applied APPLIED; next",
            "queued; queued; queued; apply 5..6 (2 events); repair 7..7"),
        row(
            "a batch that cannot be read ends the run and is fetched again",
            "start 4; live 5; live 6!; live 7; next; applied APPLIED; next",
            "queued; queued; queued; apply 5; refetch 6"),
        row(
            "each batch of a run is recognised as a duplicate after",
            "start 4; live 5; live 6#60; next; applied APPLIED; live 6#60; live 5",
            "queued; queued; apply 5..6 (2 events); duplicate; duplicate"),
        row(
            "part of a run applied already: go on after the index's watermark",
            "start 4; live 5; live 6; live 7; next; applied DUPLICATE 6; next",
            "queued; queued; queued; apply 5..7 (3 events); apply 7"),
        row(
            "a run refused as one is applied one at a time, then runs again",
            "start 4; live 5; live 6; next; rejected; next; applied APPLIED; next; applied"
                + " APPLIED; live 7; live 8; next",
            "queued; queued; apply 5..6 (2 events); apply 5; apply 6; queued; queued;"
                + " apply 7..8 (2 events)"),
        row(
            "a run whose first batch an earlier call left part applied goes one at a time",
            "start 4; live 5; live 6; next; partly; next; applied APPLIED; next; applied"
                + " APPLIED; live 7; live 8; next",
            "queued; queued; apply 5..6 (2 events); apply 5; apply 6; queued; queued;"
                + " apply 7..8 (2 events)"),
        row(
            "asleep: a run from before the sleep keeps no event, one after it its own",
            "start 4; live 5; live 6; sleep; live 7; next; purged PURGED; next",
            "queued; queued; queued; purge sleep keep; apply 5..7 (1 events)"),
        row(
            "a run is staged while the stream is rebuilt",
            "start -1; live 0; live 1; next",
            "queued; queued; apply 0..1 (2 events) staged"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("backlogCases")
  void sequencer_appliesABacklogSeveralBatchesPerCall(
      String name, String steps, String transcript) {
    assertThat(new Drive(100, 4).run(steps)).isEqualTo(transcript);
  }

  static Stream<Arguments> continuityCases() {
    return Stream.of(
        row(
            "a replay asks for the last applied batch too",
            "start 4; live 5; next; applied APPLIED; live 8; next; from",
            "queued; apply 5; queued; repair 6..7; from 5"),
        row(
            "so does a quiet stream's catch-up",
            "start 4; live 5; next; applied APPLIED; catchupfrom",
            "queued; apply 5; from 5"),
        row(
            "not when nothing applied is remembered",
            "start 4; live 7; next; from; catchupfrom",
            "queued; repair 5..6; from 5; from 5"),
        row(
            "the ring's copy of the applied batch: the same engine",
            "start 4; live 5; next; applied APPLIED; live 8; next; same 5,6,7",
            "queued; apply 5; queued; repair 6..7; same engine"),
        row(
            "another payload under the applied sequence: a new process",
            "start 4; live 5; next; applied APPLIED; live 8; next; same 5#99,6,7",
            "queued; apply 5; queued; repair 6..7; another engine"),
        row(
            "a copy that cannot be read proves nothing",
            "start 4; live 5; next; applied APPLIED; same 5!,6; compared 5!,6",
            "queued; apply 5; same engine; nothing to compare"),
        row(
            "the ring's copy of the applied batch was compared",
            "start 4; live 5; next; applied APPLIED; compared 5,6",
            "queued; apply 5; compared"),
        row(
            "a new process that has not published as far: nothing compared",
            "start 4; live 5; next; applied APPLIED; same 0,1,2; compared 0,1,2",
            "queued; apply 5; same engine; nothing to compare"),
        row(
            "a ring that did not answer: nothing compared",
            "start 4; live 5; next; applied APPLIED; compared none",
            "queued; apply 5; nothing to compare"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("continuityCases")
  void sequencer_comparesTheRingsCopyOfTheLastAppliedBatch(
      String name, String steps, String transcript) {
    assertThat(new Drive(100).run(steps)).isEqualTo(transcript);
  }

  static Stream<Arguments> rebuildCases() {
    return Stream.of(
        row("a stream with a watermark is shown", "start 4; live 5; next", "queued; apply 5"),
        row(
            "a new stream is rebuilt, staged once applied, shown once published",
            "start -1; live 0; next; applied APPLIED; next; published PURGED; live 1; next",
            "queued; apply 0 staged; publish; queued; apply 1"),
        row(
            "a publish that met a temporary error stays staged",
            "start -1; live 0; next; applied APPLIED; next; published SWALLOWED; next",
            "queued; apply 0 staged; publish; publish"),
        row(
            "a rebuild taken over waits for a catch-up before it is published",
            "start 4 staged; live 5; next; applied APPLIED; next; catchup none; next",
            "queued; apply 5 staged; idle; publish"),
        row(
            "a replay cut at its window holds the publish until the next answer",
            "start -1; live 0; next; applied APPLIED; cut; next; catchup none; next",
            "queued; apply 0 staged; idle; publish"),
        row(
            "a purge that forgets the watermark starts a rebuild",
            "start 4; lost; next; purged PURGED; live 0; next",
            "purge index_reset reset from 0; queued; apply 0 staged"),
        row(
            "a purge that keeps the watermark does not",
            "start 4; request sleep; next; purged PURGED; live 5; next",
            "purge sleep keep; queued; apply 5"),
        row(
            "history owed while shown is still owed by the rebuild after a reset",
            "start 4; cut; lost; next; purged PURGED; live 0; next; applied APPLIED; next;"
                + " catchup none; next",
            "purge index_reset reset from 0; queued; apply 0 staged; idle; publish"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("rebuildCases")
  void sequencer_movesTheRebuildLifeCycle(String name, String steps, String transcript) {
    assertThat(new Drive(100).run(steps)).isEqualTo(transcript);
  }

  @Test
  void live_fullBufferDropsAndTheGapIsReplayedLater() {
    Drive d = new Drive(2);
    assertThat(d.run("start 4; live 6; live 7; live 8; next"))
        .isEqualTo("queued; queued; dropped; repair 5..5");
  }

  @Test
  void live_duplicatesAreRecognisedWithinTheRecentWindow() {
    Drive d = new Drive(1000);
    StringBuilder steps = new StringBuilder("start -1");
    for (int s = 0; s < RecentlyApplied.BATCHES; s++) {
      steps.append("; live ").append(s).append("; next; applied APPLIED");
    }
    d.run(steps.toString());
    assertThat(d.run("live 0")).isEqualTo("duplicate");
  }

  @Test
  void live_aReplayOvertakingHundredsOfQueuedLiveBatchesIsNoRestart() {
    // 1..9 were dropped; while the replay from 1 runs, live 11..400 queue up in the SUB socket.
    Drive d = new Drive(100_000);
    d.run("start -1; live 0; next; applied APPLIED; live 10; next");
    StringBuilder replay = new StringBuilder("replay 1");
    StringBuilder applies = new StringBuilder("next; applied APPLIED");
    for (int s = 2; s <= 400; s++) {
      replay.append(',').append(s);
      applies.append("; next; applied APPLIED");
    }
    d.run(replay + " end");
    d.run(applies.toString());
    // The replay applied everything up to 400; now the queued live copies arrive, in order.
    StringBuilder late = new StringBuilder("live 11");
    for (int s = 12; s <= 400; s++) {
      late.append("; live ").append(s);
    }
    assertThat(d.run(late.toString())).doesNotContain("restart");
    assertThat(d.s.restarts()).isZero();
    assertThat(d.run("live 401; next")).isEqualTo("queued; apply 401 staged");
  }

  @Test
  void live_pastThePendingBytes_dropped() {
    Sequencer s = sequencer(100, 100, 0);
    s.start(-1, false);
    s.live(new Batch(5, 5, ONE_EVENT, null, true, 60)); // waits: 0..4 are missing
    assertThat(s.live(new Batch(6, 6, ONE_EVENT, null, true, 40))).isEqualTo(Live.QUEUED);
    assertThat(s.live(new Batch(7, 7, ONE_EVENT, null, true, 1))).isEqualTo(Live.DROPPED);
    assertThat(s.pendingBytes()).isEqualTo(100);
    s.caughtUp(List.of(new Batch(0, 0, ONE_EVENT, null, false, 10)));
    Apply first = (Apply) s.next();
    s.applied(first, ApplyResult.of(ApplyStatus.APPLIED, 0));
    assertThat(s.pendingBytes()).as("what is applied is released").isEqualTo(100);
    s.restart();
    assertThat(s.pendingBytes()).isZero();
  }

  @Test
  void dropHistory_pastAGap_letsGoOfTheReplayedBatchesAndKeepsTheLiveOnes() {
    Sequencer s = sequencer(100, 1_000, 0);
    s.start(4, false); // 5 is next
    s.caughtUp(List.of(new Batch(7, 7, ONE_EVENT, null, false, 30))); // 5..6 still missing
    s.live(new Batch(9, 9, ONE_EVENT, null, true, 20));
    assertThat(s.next()).isEqualTo(new RepairGap(5, 7, false));
    assertThat(s.replayedBytes()).isEqualTo(30);

    assertThat(s.dropHistory()).isTrue();
    assertThat(s.replayedBytes()).as("the window's room back").isZero();
    assertThat(s.pendingBytes()).as("the live batch stays").isEqualTo(20);
    assertThat(s.next())
        .as("the gap now reaches the live batch")
        .isEqualTo(new RepairGap(5, 9, false));
    assertThat(s.dropHistory()).as("nothing left to let go").isFalse();
  }

  @Test
  void catchUp_onlyWhenNothingWaits() {
    Sequencer s = sequencer(10, Long.MAX_VALUE, 0);
    assertThat(s.mayCatchUp()).as("before the watermark is read").isFalse();
    s.start(4, false);
    assertThat(s.mayCatchUp()).isTrue();
    assertThat(s.catchUpFrom()).isEqualTo(5);
    s.requestPurge("sleep");
    assertThat(s.mayCatchUp()).as("with a purge pending").isFalse();
  }

  @Test
  void batch_knowsItClears() {
    Batch clear = Batches.live(1, KvEventBatch.of(0, List.of(AllBlocksCleared.INSTANCE), null));
    assertThat(clear.clears()).isTrue();
    assertThat(Batches.live(2, KvEventBatch.of(0, List.of(), null)).clears()).isFalse();
  }

  /** A sequencer whose batches no process budget bounds; {@code mergeBlocks} 0: one per apply. */
  private static Sequencer sequencer(int maxPending, long maxPendingBytes, int mergeBlocks) {
    return new Sequencer(maxPending, maxPendingBytes, KeyMode.ENGINE, mergeBlocks, unbounded());
  }

  /** A budget nothing reaches (tests of the ordering rules alone). */
  private static MemoryBudget unbounded() {
    return MemoryBudget.of(Long.MAX_VALUE / 4, 1 << 16, Long.MAX_VALUE);
  }

  private static final KvEventBatch ONE_EVENT =
      KvEventBatch.of(0, List.of(AllBlocksCleared.INSTANCE), null);

  /** Runs a script of steps against one sequencer and returns the transcript. */
  private static final class Drive {
    final Sequencer s;
    private Action last;

    Drive(int maxPending) {
      s = sequencer(maxPending, Long.MAX_VALUE, 0);
    }

    /** Applies up to {@code mergeBlocks} blocks of consecutive batches as one. */
    Drive(int maxPending, int mergeBlocks) {
      s = sequencer(maxPending, Long.MAX_VALUE, mergeBlocks);
    }

    String run(String script) {
      List<String> out = new ArrayList<>();
      for (String step : script.split(";")) {
        String said = step(step.trim().split(" "));
        if (said != null) {
          out.add(said);
        }
      }
      return String.join("; ", out);
    }

    private String step(String[] w) {
      switch (w[0]) {
        case "start" -> s.start(Long.parseLong(w[1]), w.length > 2 && w[2].equals("staged"));
        case "live" -> {
          return s.live(batch(w[1], true)).name().toLowerCase(Locale.ROOT);
        }
        case "next" -> {
          last = s.next();
          return describe(last);
        }
        case "applied" -> {
          long wm = w.length > 2 ? Long.parseLong(w[2]) : -1;
          s.applied((Apply) last, ApplyResult.of(ApplyStatus.valueOf(w[1]), wm));
        }
        case "purged" -> s.purged(PurgeStatus.valueOf(w[1]));
        case "published" -> s.published(PurgeStatus.valueOf(w[1]));
        case "replay" -> {
          return s.replayed((RepairGap) last, batches(w[1], false), w[2].equals("end"))
              .name()
              .toLowerCase(Locale.ROOT);
        }
        case "noreplay" -> {
          return s.noReplay((RepairGap) last).name().toLowerCase(Locale.ROOT);
        }
        case "toolarge" -> {
          return s.replayTooLarge((RepairGap) last).name().toLowerCase(Locale.ROOT);
        }
        case "rejected" -> s.rejected((Apply) last);
        case "partly" -> s.oneAtATime((Apply) last);
        case "request" -> s.requestPurge(w[1]);
        case "restart" -> s.restart();
        case "sleep" -> s.asleep(true);
        case "wake" -> s.asleep(false);
        case "lost" -> s.indexLost();
        case "drift" -> s.resync();
        case "catchup" -> s.caughtUp(batches(w[1], false));
        case "cut" -> s.historyCut();
        case "from" -> {
          return "from " + s.replayFrom((RepairGap) last);
        }
        case "catchupfrom" -> {
          return "from " + s.catchUpFrom();
        }
        case "compared" -> {
          return s.compared(batches(w[1], false)) ? "compared" : "nothing to compare";
        }
        case "same" -> {
          return s.sameEngine(batches(w[1], false)) ? "same engine" : "another engine";
        }
        default -> throw new IllegalArgumentException("unknown step " + w[0]);
      }
      return null;
    }

    private static String describe(Action a) {
      if (a instanceof Apply apply) {
        int events = apply.batch().events().events().size();
        boolean run = apply.parts().size() > 1;
        return "apply "
            + (run ? apply.firstSeq() + ".." : "")
            + apply.batch().seq()
            + (run ? " (" + events + " events)" : events == 0 ? " without events" : "")
            + (apply.staged() ? " staged" : "");
      }
      if (a instanceof Action.Publish) {
        return "publish";
      }
      if (a instanceof RepairGap gap) {
        return gap.malformed()
            ? "refetch " + gap.from()
            : "repair " + gap.from() + ".." + (gap.firstLive() - 1);
      }
      if (a instanceof RunPurge p) {
        boolean reset = p.purge().mode() == PurgeMode.RESET_WATERMARK;
        return "purge "
            + p.purge().reason()
            + (reset ? " reset" : " keep")
            + (p.purge().continueFrom() >= 0 ? " from " + p.purge().continueFrom() : "");
      }
      return "idle";
    }

    private static List<Batch> batches(String seqs, boolean live) {
      List<Batch> out = new ArrayList<>();
      if (!seqs.equals("none")) {
        for (String seq : seqs.split(",")) {
          out.add(batch(seq, live));
        }
      }
      return out;
    }

    /**
     * A batch {@code S} holding one event (so that an applied batch shows whether it kept it), or
     * {@code S#H} with payload hash H (default: the sequence itself); {@code S!} cannot be read.
     */
    private static Batch batch(String spec, boolean live) {
      boolean unreadable = spec.endsWith("!");
      String[] parts = (unreadable ? spec.substring(0, spec.length() - 1) : spec).split("#");
      long seq = Long.parseLong(parts[0]);
      int hash = parts.length > 1 ? Integer.parseInt(parts[1]) : (int) seq;
      return unreadable
          ? new Batch(seq, hash, KvEventBatch.of(0, List.of(), null), "truncated", live, 0)
          : new Batch(seq, hash, ONE_EVENT, null, live, 0);
    }
  }
}
