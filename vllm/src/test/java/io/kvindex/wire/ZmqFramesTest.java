package io.kvindex.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class ZmqFramesTest {
  private static final byte[] EMPTY = new byte[0];
  private static final byte[] PAYLOAD = {(byte) 0x92, 0x00, (byte) 0x90};
  private static final byte[] TOPIC = "kv@pod-1@qwen".getBytes(StandardCharsets.UTF_8);
  private static final byte[] FF8 = HexFormat.of().parseHex("ffffffffffffffff");

  @Test
  void parseLive_threeFrames() {
    EventMessage message =
        ZmqFrames.parseLive(new byte[][] {TOPIC, seq("0000000000000102"), PAYLOAD});

    assertThat(message).isEqualTo(new EventMessage("kv@pod-1@qwen", 258, PAYLOAD));
    assertThat(message.payload()).isSameAs(PAYLOAD);
  }

  @Test
  void parseLive_emptyTopicAndUnsignedSeq() {
    EventMessage message =
        ZmqFrames.parseLive(new byte[][] {EMPTY, seq("8000000000000000"), PAYLOAD});

    assertThat(message.topic()).isEmpty();
    assertThat(Long.toUnsignedString(message.seq())).isEqualTo("9223372036854775808");
  }

  @Test
  void parseLive_wrongFrameCount_fails() {
    assertThatThrownBy(() -> ZmqFrames.parseLive(new byte[][] {TOPIC, PAYLOAD}))
        .isInstanceOf(MalformedFramesException.class)
        .hasMessage("a live KV-event message [topic, seq, payload] has 3 frames, got 2");
    assertThatThrownBy(() -> ZmqFrames.parseLive(new byte[][] {TOPIC, seq("00"), PAYLOAD, EMPTY}))
        .isInstanceOf(MalformedFramesException.class)
        .hasMessageContaining("got 4");
  }

  @Test
  void parseLive_shortSequenceFrame_fails() {
    assertThatThrownBy(() -> ZmqFrames.parseLive(new byte[][] {TOPIC, seq("0001"), PAYLOAD}))
        .isInstanceOf(MalformedFramesException.class)
        .hasMessage("frame 1 (sequence number) must be 8 bytes big-endian, got 2");
  }

  @Test
  void live_roundTrips() {
    EventMessage message = new EventMessage("t", 42, PAYLOAD);

    byte[][] frames = ZmqFrames.live(message);

    assertThat(frames[1]).isEqualTo(seq("000000000000002a"));
    assertThat(ZmqFrames.parseLive(frames)).isEqualTo(message);
  }

  @Test
  void parseReplay_dataWithoutTopic() {
    ReplayReply reply =
        ZmqFrames.parseReplay(new byte[][] {EMPTY, seq("0000000000000007"), PAYLOAD});

    assertThat(reply).isEqualTo(new ReplayReply.Batch(new EventMessage(null, 7, PAYLOAD)));
  }

  @Test
  void parseReplay_dataWithTopic() {
    ReplayReply reply =
        ZmqFrames.parseReplay(new byte[][] {EMPTY, TOPIC, seq("0000000000000007"), PAYLOAD});

    assertThat(reply)
        .isEqualTo(new ReplayReply.Batch(new EventMessage("kv@pod-1@qwen", 7, PAYLOAD)));
  }

  @Test
  void parseReplay_endMarkers() {
    assertThat(ZmqFrames.parseReplay(new byte[][] {EMPTY, FF8, EMPTY}))
        .isEqualTo(ReplayReply.End.INSTANCE);
    assertThat(ZmqFrames.parseReplay(new byte[][] {EMPTY, EMPTY, FF8, EMPTY}))
        .isEqualTo(ReplayReply.End.INSTANCE);
    assertThat(ZmqFrames.parseReplay(new byte[][] {EMPTY, seq("0000000000000003"), EMPTY}))
        .as("an empty payload also ends the replay")
        .isEqualTo(ReplayReply.End.INSTANCE);
    assertThat(ZmqFrames.parseReplay(new byte[][] {EMPTY, TOPIC, FF8, PAYLOAD}))
        .as("seq -1 ends the replay")
        .isEqualTo(ReplayReply.End.INSTANCE);
  }

  @ParameterizedTest
  @EnumSource(ReplayFraming.class)
  void replayFrames_roundTrip(ReplayFraming framing) {
    EventMessage message = new EventMessage("kv@pod-1@qwen", 11, PAYLOAD);

    ReplayReply data = ZmqFrames.parseReplay(ZmqFrames.replayBatch(framing, message));
    ReplayReply end = ZmqFrames.parseReplay(ZmqFrames.replayEnd(framing));

    EventMessage expected =
        framing == ReplayFraming.WITH_TOPIC ? message : new EventMessage(null, 11, PAYLOAD);
    assertThat(data).isEqualTo(new ReplayReply.Batch(expected));
    assertThat(end).isEqualTo(ReplayReply.End.INSTANCE);
  }

  @Test
  void replayEnd_matchesVllmFrames() {
    assertThat(ZmqFrames.replayEnd(ReplayFraming.NO_TOPIC))
        .isDeepEqualTo(new byte[][] {EMPTY, FF8, EMPTY});
    assertThat(ZmqFrames.replayEnd(ReplayFraming.WITH_TOPIC))
        .isDeepEqualTo(new byte[][] {EMPTY, EMPTY, FF8, EMPTY});
  }

  @Test
  void parseReplay_badFrames_fail() {
    assertThatThrownBy(() -> ZmqFrames.parseReplay(new byte[][] {EMPTY, PAYLOAD}))
        .isInstanceOf(MalformedFramesException.class)
        .hasMessageContaining("has 3 frames")
        .hasMessageEndingWith("got 2");
    assertThatThrownBy(
            () -> ZmqFrames.parseReplay(new byte[][] {EMPTY, TOPIC, seq("01"), PAYLOAD, EMPTY}))
        .isInstanceOf(MalformedFramesException.class)
        .hasMessageEndingWith("got 5");
    assertThatThrownBy(
            () -> ZmqFrames.parseReplay(new byte[][] {seq("0000000000000001"), PAYLOAD, EMPTY}))
        .isInstanceOf(MalformedFramesException.class)
        .hasMessageContaining("frame 0 of a replay reply must be the empty delimiter frame");
    assertThatThrownBy(() -> ZmqFrames.parseReplay(new byte[][] {EMPTY, TOPIC, seq("01"), PAYLOAD}))
        .isInstanceOf(MalformedFramesException.class)
        .hasMessage("frame 2 (sequence number) must be 8 bytes big-endian, got 1");
    assertThatThrownBy(() -> ZmqFrames.parseReplay(new byte[][] {EMPTY, null, PAYLOAD}))
        .isInstanceOf(MalformedFramesException.class)
        .hasMessage("frame 1 is null");
  }

  @Test
  void replayRequest_isDelimiterAndSeq8() {
    byte[][] frames = ZmqFrames.replayRequest(300);

    assertThat(frames).isDeepEqualTo(new byte[][] {EMPTY, seq("000000000000012c")});
  }

  @Test
  void parseReplayRequest_routerView() {
    byte[] identity = {0, 1, 2, 3, 4};

    assertThat(
            ZmqFrames.parseReplayRequest(new byte[][] {identity, EMPTY, seq("000000000000012c")}))
        .isEqualTo(new ReplayRequest(identity, 300));
    assertThat(ZmqFrames.parseReplayRequest(new byte[][] {identity, EMPTY, seq("012c")}).startSeq())
        .as("any length up to 8 bytes, like vLLM's int.from_bytes")
        .isEqualTo(300);
    assertThatThrownBy(() -> ZmqFrames.parseReplayRequest(new byte[][] {identity, seq("012c")}))
        .isInstanceOf(MalformedFramesException.class)
        .hasMessageEndingWith("has 3 frames, got 2");
    assertThatThrownBy(
            () -> ZmqFrames.parseReplayRequest(new byte[][] {identity, EMPTY, new byte[9]}))
        .isInstanceOf(MalformedFramesException.class)
        .hasMessage("frame 2 (replay start sequence) must be at most 8 bytes, got 9");
  }

  private static byte[] seq(String hex) {
    return HexFormat.of().parseHex(hex);
  }
}
