package io.kvindex.ingester.stream;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.ApplyResult;
import io.kvindex.index.ApplyStatus;
import io.kvindex.index.PurgeMode;
import io.kvindex.index.PurgeStatus;
import io.kvindex.ingester.stream.Sequencer.Action;
import io.kvindex.ingester.stream.Sequencer.Apply;
import io.kvindex.ingester.stream.Sequencer.RepairGap;
import io.kvindex.ingester.stream.Sequencer.RunPurge;
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
 * restart} (a new incarnation seen), {@code catchup S,S..} (an idle stream's replay).
 */
class SequencerTest {

  static Stream<Arguments> cases() {
    return Stream.of(
        row("first batch of a new stream", "start -1; live 0; next", "queued; apply 0"),
        row("any first sequence starts a new stream", "start -1; live 0; next", "queued; apply 0"),
        row("in order after the watermark", "start 4; live 5; next", "queued; apply 5"),
        row(
            "applied batches advance",
            "start 4; live 5; live 6; next; applied APPLIED; next; applied APPLIED; next",
            "queued; queued; apply 5; apply 6; idle"),
        row("a gap asks for a replay", "start 4; live 7; next", "queued; repair 5..6"),
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
            "queued; repair 5..6; empty; purge gap_replay_failed reset from 7; apply 7"),
        row(
            "a silent replay purges too",
            "start 4; live 7; next; replay none open; next",
            "queued; repair 5..6; silent; purge gap_replay_failed reset from 7"),
        row(
            "a replay beyond its ring purges and goes on from the oldest it holds",
            "start 4; live 9; next; replay 6,7,8 end; next; purged PURGED; next",
            "queued; repair 5..8; beyond_ring; purge gap_beyond_ring reset from 6; apply 6"),
        row(
            "no replay endpoint purges and goes on from the live batch",
            "start 4; live 7; next; noreplay; next",
            "queued; repair 5..6; absent; purge gap_no_replay reset from 7"),
        row(
            "a new stream whose ring lost its start just begins later",
            "start -1; live 9; next; replay 6,7,8 end; next",
            "queued; repair 0..8; beyond_ring; apply 6"),
        row(
            "a new stream without replay begins at the live batch",
            "start -1; live 9; next; noreplay; next",
            "queued; repair 0..8; absent; apply 9"),
        row(
            "a batch sent twice is a duplicate",
            "start 4; live 5; next; applied APPLIED; live 5; next",
            "queued; apply 5; duplicate; idle"),
        row(
            "an old sequence with a new payload is an engine restart",
            "start 4; live 5; next; applied APPLIED; live 0#99; next; purged PURGED; next",
            "queued; apply 5; restart; purge engine_restart reset from 0; apply 0"),
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
            "apply 5"));
  }

  private static Arguments row(String name, String steps, String transcript) {
    return Arguments.of(name, steps, transcript);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void sequencer_followsTheOrderingRules(String name, String steps, String transcript) {
    assertThat(new Drive(4).run(steps)).isEqualTo(transcript);
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
    for (int s = 0; s < Sequencer.RECENT; s++) {
      steps.append("; live ").append(s).append("; next; applied APPLIED");
    }
    d.run(steps.toString());
    assertThat(d.run("live 0")).isEqualTo("duplicate");
  }

  @Test
  void catchUp_onlyWhenNothingWaits() {
    Sequencer s = new Sequencer(10);
    assertThat(s.mayCatchUp()).as("before the watermark is read").isFalse();
    s.start(4);
    assertThat(s.mayCatchUp()).isTrue();
    assertThat(s.catchUpFrom()).isEqualTo(5);
    s.requestPurge("sleep");
    assertThat(s.mayCatchUp()).as("with a purge pending").isFalse();
  }

  @Test
  void batch_knowsItClears() {
    Batch clear = Batch.of(1, KvEventBatch.of(0, List.of(AllBlocksCleared.INSTANCE), null));
    assertThat(clear.clears()).isTrue();
    assertThat(Batch.of(2, KvEventBatch.of(0, List.of(), null)).clears()).isFalse();
  }

  /** Runs a script of steps against one sequencer and returns the transcript. */
  private static final class Drive {
    private final Sequencer s;
    private Action last;

    Drive(int maxPending) {
      s = new Sequencer(maxPending);
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
        case "start" -> s.start(Long.parseLong(w[1]));
        case "live" -> {
          return s.live(batch(w[1])).name().toLowerCase(Locale.ROOT);
        }
        case "next" -> {
          last = s.next();
          return describe(last);
        }
        case "applied" -> {
          long wm = w.length > 2 ? Long.parseLong(w[2]) : -1;
          Apply a = (Apply) last;
          s.applied(a.batch(), ApplyResult.of(ApplyStatus.valueOf(w[1]), wm));
        }
        case "purged" -> s.purged(PurgeStatus.valueOf(w[1]));
        case "replay" -> {
          return s.replayed((RepairGap) last, batches(w[1]), w[2].equals("end"))
              .name()
              .toLowerCase(Locale.ROOT);
        }
        case "noreplay" -> {
          return s.noReplay((RepairGap) last).name().toLowerCase(Locale.ROOT);
        }
        case "request" -> s.requestPurge(w[1]);
        case "restart" -> s.restart();
        case "catchup" -> s.caughtUp(batches(w[1]));
        default -> throw new IllegalArgumentException("unknown step " + w[0]);
      }
      return null;
    }

    private static String describe(Action a) {
      if (a instanceof Apply apply) {
        return "apply " + apply.batch().seq();
      }
      if (a instanceof RepairGap gap) {
        return "repair " + gap.from() + ".." + (gap.firstLive() - 1);
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

    private static List<Batch> batches(String seqs) {
      List<Batch> out = new ArrayList<>();
      if (!seqs.equals("none")) {
        for (String seq : seqs.split(",")) {
          out.add(batch(seq));
        }
      }
      return out;
    }

    /** A batch {@code S}, or {@code S#H} with payload hash H (default: the sequence itself). */
    private static Batch batch(String spec) {
      String[] parts = spec.split("#");
      long seq = Long.parseLong(parts[0]);
      int hash = parts.length > 1 ? Integer.parseInt(parts[1]) : (int) seq;
      return new Batch(seq, hash, KvEventBatch.of(0, List.of(), null), null);
    }
  }
}
