package io.kvindex.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.wire.ReplayFraming;
import io.kvindex.wire.ReplayReply;
import io.kvindex.wire.ZmqFrames;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMsg;

class PublisherSocketTest {
  private final ZContext zmq = new ZContext();
  private long requestSeed = 1000;

  @AfterEach
  void closeContext() {
    zmq.close();
  }

  private ZMQ.Socket subscriber(String endpoint) {
    ZMQ.Socket sub = zmq.createSocket(SocketType.SUB);
    sub.setReceiveTimeOut(50);
    sub.setHandshakeIvl(500);
    sub.subscribe(new byte[0]);
    sub.connect(endpoint);
    return sub;
  }

  /** Submits requests until the subscriber sees one (the slow-joiner handshake); returns it. */
  private ZMsg awaitFirst(SimulatedPod pod, ZMQ.Socket sub) {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (System.nanoTime() < deadline) {
      pod.submit(TestPods.request(requestSeed++, 16, 1));
      ZMsg msg = ZMsg.recvMsg(sub);
      if (msg != null) {
        return msg;
      }
    }
    throw new AssertionError("subscriber never received a message");
  }

  private static ZMsg receive(ZMQ.Socket socket) {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (System.nanoTime() < deadline) {
      ZMsg msg = ZMsg.recvMsg(socket);
      if (msg != null) {
        return msg;
      }
    }
    throw new AssertionError("no message within 10 s");
  }

  private static byte[] frame(ZMsg msg, int index) {
    return new ArrayList<>(msg).get(index).getData();
  }

  private static long seq(byte[] frame) {
    return ByteBuffer.wrap(frame).getLong();
  }

  @Test
  void publish_sendsTopicSeqPayloadWithContiguousSequence() {
    try (SimulatedPod pod =
        TestPods.start(TestPods.config().topic("kv@pod-0@m").capacityBlocks(256).build())) {
      ZMQ.Socket sub = subscriber(pod.endpoints().get(0).publish());
      ZMsg first = awaitFirst(pod, sub);
      assertThat(first.size()).isEqualTo(3);
      assertThat(first.getFirst().getString(StandardCharsets.UTF_8)).isEqualTo("kv@pod-0@m");
      long start = seq(frame(first, 1));

      for (int i = 0; i < 20; i++) {
        pod.submit(TestPods.request(requestSeed++, 16, 1));
      }
      for (int i = 1; i <= 20; i++) {
        ZMsg msg = receive(sub);
        assertThat(seq(frame(msg, 1))).isEqualTo(start + i);
      }
    }
  }

  @Test
  void publish_emptyTopicIsAZeroLengthFrame() {
    try (SimulatedPod pod = TestPods.start(TestPods.config().build())) {
      ZMQ.Socket sub = subscriber(pod.endpoints().get(0).publish());
      ZMsg first = awaitFirst(pod, sub);
      assertThat(first.getFirst().getData()).isEmpty();
      assertThat(frame(first, 1)).hasSize(8);
    }
  }

  @Test
  void publishConnect_reachesABoundCollector() {
    ZMQ.Socket sub = zmq.createSocket(SocketType.SUB);
    sub.setReceiveTimeOut(50);
    sub.setHandshakeIvl(500);
    sub.subscribe(new byte[0]);
    sub.bind("tcp://127.0.0.1:0");
    String endpoint = sub.getLastEndpoint();
    try (SimulatedPod pod = TestPods.start(TestPods.config().publishConnect(endpoint).build())) {
      assertThat(pod.endpoints().get(0).publish()).isEqualTo(endpoint);
      assertThat(pod.endpoints().get(0).publishBound()).isFalse();
      assertThat(awaitFirst(pod, sub).size()).isEqualTo(3);
    }
  }

  @Test
  void faults_duplicateAndDropAffectOnlyTheLiveStream() {
    try (SimulatedPod pod = TestPods.start(TestPods.config().capacityBlocks(256).build())) {
      ZMQ.Socket sub = subscriber(pod.endpoints().get(0).publish());
      long start = seq(frame(awaitFirst(pod, sub), 1));

      pod.faults().duplicateFraction(1);
      pod.submit(TestPods.request(requestSeed++, 16, 1));
      assertThat(seq(frame(receive(sub), 1))).isEqualTo(start + 1);
      assertThat(seq(frame(receive(sub), 1))).isEqualTo(start + 1);

      pod.faults().clear().dropFraction(1);
      pod.submit(TestPods.request(requestSeed++, 16, 1));
      pod.faults().clear();
      pod.submit(TestPods.request(requestSeed++, 16, 1));
      assertThat(seq(frame(receive(sub), 1))).as("seq start+2 was dropped").isEqualTo(start + 3);

      pod.faults().silenced(true);
      pod.submit(TestPods.request(requestSeed++, 16, 1));
      pod.faults().silenced(false);
      pod.submit(TestPods.request(requestSeed++, 16, 1));
      assertThat(seq(frame(receive(sub), 1))).isEqualTo(start + 5);

      List<Long> replayed = replaySeqs(pod, start + 2);
      assertThat(replayed).containsExactly(start + 2, start + 3, start + 4, start + 5);
    }
  }

  @Test
  void faults_delayHoldsLiveMessages() {
    try (SimulatedPod pod = TestPods.start(TestPods.config().capacityBlocks(256).build())) {
      ZMQ.Socket sub = subscriber(pod.endpoints().get(0).publish());
      long start = seq(frame(awaitFirst(pod, sub), 1));

      pod.faults().delay(Duration.ofMillis(300));
      long sentAt = System.nanoTime();
      pod.submit(TestPods.request(requestSeed++, 16, 1));
      ZMsg delayed = receive(sub);

      assertThat(System.nanoTime() - sentAt).isGreaterThanOrEqualTo(300_000_000L);
      assertThat(seq(frame(delayed, 1))).isEqualTo(start + 1);
    }
  }

  /** The sequence numbers a replay from {@code from} returns, checking it ends with the marker. */
  private List<Long> replaySeqs(SimulatedPod pod, long from) {
    List<ZMsg> replies = replay(pod.endpoints().get(0).replay(), from);
    List<Long> seqs = new ArrayList<>();
    for (int i = 0; i < replies.size(); i++) {
      ReplayReply reply = ZmqFrames.parseReplay(frames(replies.get(i)));
      if (i == replies.size() - 1) {
        assertThat(reply).isEqualTo(ReplayReply.End.INSTANCE);
      } else {
        seqs.add(((ReplayReply.Batch) reply).message().seq());
      }
    }
    return seqs;
  }

  private static byte[][] frames(ZMsg msg) {
    return msg.stream().map(f -> f.getData()).toArray(byte[][]::new);
  }

  /** Every reply to one replay request, end marker included (as seen by a DEALER). */
  private List<ZMsg> replay(String endpoint, long from) {
    ZMQ.Socket dealer = zmq.createSocket(SocketType.DEALER);
    dealer.setReceiveTimeOut(50);
    dealer.setHandshakeIvl(500);
    dealer.connect(endpoint);
    byte[][] request = ZmqFrames.replayRequest(from);
    dealer.sendMore(request[0]);
    dealer.send(request[1]);
    List<ZMsg> replies = new ArrayList<>();
    while (true) {
      ZMsg msg = receive(dealer);
      replies.add(msg);
      if (msg.getLast().getData().length == 0) {
        dealer.close();
        return replies;
      }
    }
  }

  @ParameterizedTest
  @EnumSource(ReplayFraming.class)
  void replay_returnsTheRequestedRangeInOrderThenTheEndMarker(ReplayFraming framing) {
    try (DefaultSimulatedPod pod =
        TestPods.start(
            TestPods.config().replayFraming(framing).topic("t").capacityBlocks(256).build())) {
      Recorder rec = new Recorder();
      pod.addListener(rec);
      for (int i = 0; i < 12; i++) {
        pod.submit(TestPods.request(requestSeed++, 16, 1));
      }

      List<ZMsg> replies = replay(pod.endpoints().get(0).replay(), 5);

      assertThat(replies).hasSize(8);
      for (int i = 0; i < 7; i++) {
        ZMsg msg = replies.get(i);
        assertThat(msg.pop().getData()).as("DEALER sees the empty delimiter").isEmpty();
        if (framing == ReplayFraming.WITH_TOPIC) {
          assertThat(msg.pop().getString(StandardCharsets.UTF_8)).isEqualTo("t");
        }
        assertThat(msg.size()).isEqualTo(2);
        assertThat(seq(msg.pop().getData())).isEqualTo(5 + i);
        assertThat(msg.pop().getData()).isEqualTo(rec.payloads.get(5 + i));
      }
      ZMsg end = replies.get(7);
      assertThat(end.pop().getData()).isEmpty();
      if (framing == ReplayFraming.WITH_TOPIC) {
        assertThat(end.pop().getData()).isEmpty();
      }
      assertThat(end.size()).isEqualTo(2);
      assertThat(seq(end.pop().getData())).isEqualTo(-1);
      assertThat(end.pop().getData()).isEmpty();
    }
  }

  @Test
  void replay_olderThanTheRingStartsFromTheOldestHeld() {
    try (SimulatedPod pod =
        TestPods.start(TestPods.config().replayBufferSteps(4).capacityBlocks(256).build())) {
      for (int i = 0; i < 10; i++) {
        pod.submit(TestPods.request(requestSeed++, 16, 1));
      }
      assertThat(replaySeqs(pod, 0)).containsExactly(6L, 7L, 8L, 9L);
      assertThat(replaySeqs(pod, 9)).containsExactly(9L);
      assertThat(replaySeqs(pod, 10)).isEmpty();
    }
  }

  @Test
  void replay_afterRestartHoldsOnlyTheNewProcessBatches() {
    try (SimulatedPod pod = TestPods.start(TestPods.config().capacityBlocks(256).build())) {
      for (int i = 0; i < 5; i++) {
        pod.submit(TestPods.request(requestSeed++, 16, 1));
      }
      pod.restart();
      pod.submit(TestPods.request(requestSeed++, 16, 1));

      assertThat(replaySeqs(pod, 0)).containsExactly(0L);
    }
  }

  @Test
  void replay_badRequestIsIgnoredAndTheSocketKeepsServing() {
    try (SimulatedPod pod = TestPods.start(TestPods.config().capacityBlocks(256).build())) {
      pod.submit(TestPods.request(requestSeed++, 16, 1));
      ZMQ.Socket dealer = zmq.createSocket(SocketType.DEALER);
      dealer.connect(pod.endpoints().get(0).replay());
      dealer.send("only-one-frame");

      assertThat(replaySeqs(pod, 0)).containsExactly(0L);
    }
  }
}
