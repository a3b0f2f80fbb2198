package io.kvindex.ingester.stream;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.ApplyResult;
import io.kvindex.index.ApplyStatus;
import io.kvindex.index.KeyMode;
import io.kvindex.index.StreamId;
import io.kvindex.ingester.stream.Action.Apply;
import io.kvindex.ingester.stream.MemoryBudget.Use;
import io.kvindex.wire.EventMessage;
import io.kvindex.wire.KvEventEncoder;
import io.kvindex.wire.WireEra;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMsg;

/** The budget's accounting, its replay slots and windows, and what a sequencer counts in it. */
class MemoryBudgetTest {
  private static final long MIB = 1 << 20;

  @Test
  void tryTake_refusedPastItsHalf_takeForced_peakKept() {
    MemoryBudget budget = MemoryBudget.of(4 * MIB, 2, Long.MAX_VALUE);

    assertThat(budget.tryTake(Use.LIVE, 2 * MIB)).isTrue();
    assertThat(budget.tryTake(Use.LIVE, 1)).as("the live half is spent").isFalse();
    assertThat(budget.tryTake(Use.REPLAY, MIB)).as("the replay half is its own").isTrue();
    budget.take(Use.LIVE, 10); // already in memory: counted whatever the bound
    assertThat(budget.used(Use.LIVE)).isEqualTo(2 * MIB + 10);
    budget.give(Use.LIVE, 2 * MIB + 10);
    budget.give(Use.REPLAY, MIB);

    assertThat(budget.used()).isZero();
    assertThat(budget.peak()).isEqualTo(3 * MIB + 10);
  }

  @Test
  void windowBytes_anEqualShareOfTheReplayHalf_atMostTheCap() {
    assertThat(MemoryBudget.of(8 * MIB, 2, Long.MAX_VALUE).windowBytes()).isEqualTo(2 * MIB);
    assertThat(MemoryBudget.of(8 * MIB, 2, MIB).windowBytes()).isEqualTo(MIB);
    MemoryBudget budget = MemoryBudget.of(8 * MIB, 2, Long.MAX_VALUE);
    try (MemoryBudget.Window w = budget.window(MIB + MIB / 2)) {
      assertThat(w.size()).as("less what the stream still holds").isEqualTo(MIB / 2);
      assertThat(w.tryTake(MIB / 2)).isTrue();
      assertThat(w.tryTake(1)).isFalse();
      assertThat(budget.used(Use.REPLAY)).isEqualTo(MIB / 2);
    }
    assertThat(budget.used()).as("a closed window gives its bytes back").isZero();
  }

  @Test
  void replaySlots_atMostN_grantedInTheOrderAsked_aStreamThatLeavesTheLineLetsOthersOn() {
    MemoryBudget.ReplaySlots slots = new MemoryBudget.ReplaySlots(1);
    StreamId a = StreamId.of("m", "a");
    StreamId b = StreamId.of("m", "b");
    StreamId c = StreamId.of("m", "c");

    assertThat(slots.tryAcquire(a)).isTrue();
    assertThat(slots.tryAcquire(a)).as("held already").isTrue();
    assertThat(slots.tryAcquire(b)).isFalse();
    assertThat(slots.tryAcquire(c)).isFalse();
    assertThat(slots.waiting()).isEqualTo(2);
    slots.release(a);
    assertThat(slots.tryAcquire(c)).as("b asked first").isFalse();
    assertThat(slots.tryAcquire(a)).as("a asks again: behind b and c").isFalse();
    assertThat(slots.tryAcquire(b)).isTrue();
    slots.release(b);
    slots.release(c); // c no longer wants one: a, next in line, gets it
    assertThat(slots.tryAcquire(a)).isTrue();
    assertThat(slots.held()).isEqualTo(1);
    assertThat(slots.waiting()).isZero();
    assertThat(slots.waits()).as("each wait counted once").isEqualTo(3);
  }

  /** Over real jeromq sockets: every frame received is counted until read, then given back. */
  @Test
  void pipe_countsWhatTheSocketReceivedUntilItIsRead() throws Exception {
    MemoryBudget budget = MemoryBudget.of(4 * MIB, 1, Long.MAX_VALUE);
    MemoryBudget.Pipe pipe = budget.pipe(Use.LIVE);
    try (ZContext ctx = new ZContext()) {
      ZMQ.Socket push = ctx.createSocket(SocketType.PUSH);
      push.setLinger(0);
      int port = push.bindToRandomPort("tcp://127.0.0.1");
      ZMQ.Socket pull = ctx.createSocket(SocketType.PULL);
      pull.setLinger(0);
      pull.setMsgAllocator(pipe);
      pull.connect("tcp://127.0.0.1:" + port);
      byte[] payload = new byte[10_000];
      for (int i = 0; i < 3; i++) {
        push.sendMore("topic".getBytes(StandardCharsets.UTF_8));
        push.send(payload, 0);
      }
      long each = 5 + 10_000 + 2L * MemoryBudget.FRAME_OVERHEAD;
      long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
      while (pipe.unread() < 3 * each && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      // The connection's handshake command is counted too (tens of bytes, until the socket closes).
      long handshake = pipe.unread() - 3 * each;
      assertThat(handshake).isBetween(0L, 512L);
      assertThat(budget.used(Use.LIVE)).isEqualTo(pipe.unread());

      ZMsg one = ZMsg.recvMsg(pull);
      one.forEach(f -> pipe.read(f.size()));
      assertThat(budget.used(Use.LIVE)).isEqualTo(2 * each + handshake);
      pull.close();
      pipe.close();
      assertThat(budget.used()).as("what was never read goes with the socket").isZero();
    }
  }

  @Test
  void sequencer_countsWhatItHolds_refusesLiveBatchesPastTheLiveHalf_givesAllBack() {
    MemoryBudget budget = MemoryBudget.of(2 * MIB, 1, Long.MAX_VALUE);
    Sequencer s = new Sequencer(1000, Long.MAX_VALUE, KeyMode.ENGINE, 0, budget);
    s.start(-1, false);
    Batch big = batch(5, 600 << 10, true);
    assertThat(s.live(big)).isEqualTo(Live.QUEUED);
    assertThat(s.live(batch(6, 600 << 10, true)))
        .as("the live half (1 MiB) is spent")
        .isEqualTo(Live.OVER_BUDGET);
    assertThat(budget.used(Use.LIVE)).isEqualTo(big.bytes());

    s.caughtUp(List.of(batch(0, 100, false), batch(1, 100, false)));
    assertThat(budget.used(Use.REPLAY)).isEqualTo(200);
    assertThat(s.replayedBytes()).isEqualTo(200);
    Apply first = (Apply) s.next();
    s.applied(first, ApplyResult.of(ApplyStatus.APPLIED, 0));
    assertThat(budget.used(Use.REPLAY)).isEqualTo(100);

    s.restart();
    assertThat(budget.used()).as("a restart lets go of everything").isZero();
  }

  @Test
  void caughtUp_neverHoldsMoreThanTheBound_theNewestMakesRoomForOlderHistory() {
    MemoryBudget budget = MemoryBudget.of(2 * MIB, 1, Long.MAX_VALUE);
    Sequencer s = new Sequencer(3, Long.MAX_VALUE, KeyMode.ENGINE, 0, budget);
    s.start(-1, false);
    for (long seq = 10; seq < 13; seq++) {
      s.live(batch(seq, 100, true));
    }

    s.caughtUp(IntStream.range(0, 5).mapToObj(i -> batch(i, 100, false)).toList());

    assertThat(budget.used()).as("three batches of 100 bytes are held, the bound").isEqualTo(300);
    assertThat(s.live(batch(13, 100, true)))
        .as("no room is left for another")
        .isEqualTo(Live.DROPPED);
    assertThat(((Apply) s.next()).batch().seq()).as("what comes next is held").isZero();
    assertThat(budget.used()).isEqualTo(300);
  }

  @Test
  void replayWindow_cutWhenFull_passesOverWhatWasNotAsked_aBatchNoWindowHoldsIsTooLarge() {
    MemoryBudget budget = MemoryBudget.of(4 * MIB, 1, 64 << 10);
    List<Batch> malformed = new ArrayList<>();
    try (ReplayWindow w =
        new ReplayWindow(
            budget.window(0),
            budget.windowBytes(),
            KeyMode.ENGINE,
            5,
            5,
            Long.MAX_VALUE,
            100,
            malformed::add,
            (m, b) -> {})) {
      assertThat(w.take(message(4, 10))).as("below what was asked: passed over").isTrue();
      int taken = 0;
      while (w.take(message(5 + taken, 1000))) {
        taken++;
      }
      w.read(new Replay.Read(false, true));
      assertThat(taken).isPositive();
      assertThat(w.batches()).hasSize(taken).first().extracting(Batch::seq).isEqualTo(5L);
      assertThat(w.cut()).isTrue();
      assertThat(w.tooLarge()).isFalse();
      assertThat(budget.used(Use.REPLAY)).isEqualTo(w.bytes()).isLessThanOrEqualTo(64 << 10);
    }
    assertThat(budget.used()).isZero();

    try (ReplayWindow w =
        new ReplayWindow(
            budget.window(0),
            budget.windowBytes(),
            KeyMode.ENGINE,
            0,
            0,
            Long.MAX_VALUE,
            100,
            malformed::add,
            (m, b) -> {})) {
      assertThat(w.take(message(0, 20_000))).isFalse();
      w.read(new Replay.Read(false, true));
      assertThat(w.tooLarge()).isTrue();
      assertThat(w.cut()).isFalse();
    }
    assertThat(malformed).isEmpty();
  }

  @Test
  void batchBytes_engineModeDropsTheTokens_estimateCoversTheArrays() {
    List<Long> hashes = new ArrayList<>();
    List<Integer> tokens = new ArrayList<>();
    for (int i = 0; i < 256; i++) {
      hashes.add(1_000_000L + i);
    }
    for (int i = 0; i < 256 * 16; i++) {
      tokens.add(1000 + i);
    }
    byte[] payload =
        KvEventEncoder.of(WireEra.V0_22)
            .encode(
                KvEventBatch.of(
                    1.0,
                    List.of(
                        new BlockRemoved(hashes, null, null),
                        BlockStored.of(hashes, 7L, tokens, 16),
                        AllBlocksCleared.INSTANCE),
                    0));
    EventMessage m = new EventMessage("", 3, payload);

    Batch engine = Batch.decode(m, true, KeyMode.ENGINE);
    Batch token = Batch.decode(m, true, KeyMode.TOKEN);

    BlockStored kept = (BlockStored) token.events().events().get(1);
    assertThat(kept.tokenIds()).hasSize(4096);
    assertThat(((BlockStored) engine.events().events().get(1)).tokenIds()).isEmpty();
    assertThat(engine.bytes()).isGreaterThan(2 * 256 * 8L).isLessThan(payload.length);
    assertThat(token.bytes() - engine.bytes()).isGreaterThanOrEqualTo(4096 * 4L);
    assertThat(token.bytes())
        .as("about the payload's size, not several times it")
        .isLessThan(2L * payload.length);
  }

  private static Batch batch(long seq, long bytes, boolean live) {
    return new Batch(
        seq,
        (int) seq,
        KvEventBatch.of(0, List.of(AllBlocksCleared.INSTANCE), 0),
        null,
        live,
        bytes);
  }

  /** A replayed message whose store holds {@code blocks} hashes. */
  private static EventMessage message(long seq, int blocks) {
    List<Long> hashes = new ArrayList<>();
    for (int i = 0; i < blocks; i++) {
      hashes.add(seq << 32 | i);
    }
    byte[] payload =
        KvEventEncoder.of(WireEra.V0_22)
            .encode(KvEventBatch.of(1.0, List.of(BlockStored.of(hashes, null, List.of(), 16)), 0));
    return new EventMessage("", seq, payload);
  }
}
