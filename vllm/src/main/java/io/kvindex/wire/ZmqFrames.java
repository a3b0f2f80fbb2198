package io.kvindex.wire;

import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * vLLM's ZeroMQ framing of KV-event batches, as pure functions over multipart frames (no sockets).
 * Thread-safe (stateless).
 *
 * <ul>
 *   <li>Live (PUB to SUB): {@code [topic, seq8, payload]}; seq8 is 8 bytes big-endian.
 *   <li>Replay request (DEALER to ROUTER): {@code ["", seq8]}; the ROUTER sees {@code [identity,
 *       "", seq]}.
 *   <li>Replay reply (ROUTER to DEALER, as the DEALER receives it, the empty delimiter first):
 *       {@code ["", seq8, payload]} before vLLM PR #45177, {@code ["", topic, seq8, payload]}
 *       after; the end marker is {@code ["", FF×8, ""]} or {@code ["", "", FF×8, ""]}. A sequence
 *       of -1 or an empty payload means the end in both layouts.
 * </ul>
 *
 * Frames that do not fit raise {@link MalformedFramesException} saying what is wrong. Payload
 * arrays are passed through, not copied.
 */
public final class ZmqFrames {
  /** The sequence number of the replay end marker (eight {@code FF} bytes). */
  public static final long END_SEQ = -1L;

  private static final byte[] EMPTY = new byte[0];

  private ZmqFrames() {}

  /**
   * Parses a live message {@code [topic, seq8, payload]}.
   *
   * @throws MalformedFramesException if there are not exactly 3 frames or the sequence frame is not
   *     8 bytes
   */
  public static EventMessage parseLive(byte[][] frames) {
    checkCount(frames, 3, "a live KV-event message [topic, seq, payload]");
    return new EventMessage(topic(frames[0]), seq(frames, 1), frames[2]);
  }

  /** The frames of a live message: {@code [topic, seq8, payload]}. */
  public static byte[][] live(EventMessage message) {
    return new byte[][] {message.topicBytes(), seqBytes(message.seq()), message.payload()};
  }

  /** The frames a DEALER sends to ask for a replay from {@code startSeq}: {@code ["", seq8]}. */
  public static byte[][] replayRequest(long startSeq) {
    return new byte[][] {EMPTY, seqBytes(startSeq)};
  }

  /**
   * Parses a replay request as a ROUTER receives it, {@code [identity, "", seq]}. Like vLLM, it
   * reads the sequence as an unsigned big-endian integer of any length up to 8 bytes.
   *
   * @throws MalformedFramesException if there are not exactly 3 frames (vLLM ignores such a
   *     request) or the sequence is longer than 8 bytes
   */
  public static ReplayRequest parseReplayRequest(byte[][] frames) {
    checkCount(frames, 3, "a replay request [identity, \"\", seq] as a ROUTER receives it");
    byte[] seq = frames[2];
    if (seq.length > 8) {
      throw new MalformedFramesException(
          "frame 2 (replay start sequence) must be at most 8 bytes, got " + seq.length);
    }
    long start = 0;
    for (byte b : seq) {
      start = (start << 8) | (b & 0xffL);
    }
    return new ReplayRequest(frames[0], start);
  }

  /**
   * Parses a replay reply as a DEALER receives it, in either layout.
   *
   * @throws MalformedFramesException if frame 0 is not the empty delimiter, the frame count is
   *     neither 3 nor 4, or the sequence frame is not 8 bytes
   */
  public static ReplayReply parseReplay(byte[][] frames) {
    Objects.requireNonNull(frames, "frames");
    checkFrames(frames);
    if (frames.length != 3 && frames.length != 4) {
      throw new MalformedFramesException(
          "a replay reply as a DEALER receives it has 3 frames [\"\", seq, payload] (before vLLM"
              + " PR #45177) or 4 [\"\", topic, seq, payload], got "
              + frames.length);
    }
    if (frames[0].length != 0) {
      throw new MalformedFramesException(
          "frame 0 of a replay reply must be the empty delimiter frame (receive with a DEALER"
              + " socket), got "
              + frames[0].length
              + " bytes");
    }
    boolean withTopic = frames.length == 4;
    int seqFrame = withTopic ? 2 : 1;
    long seq = seq(frames, seqFrame);
    byte[] payload = frames[seqFrame + 1];
    if (seq == END_SEQ || payload.length == 0) {
      return ReplayReply.End.INSTANCE;
    }
    return new ReplayReply.Batch(
        new EventMessage(withTopic ? topic(frames[1]) : null, seq, payload));
  }

  /**
   * The frames of one replayed batch as a DEALER receives them (a ROUTER sends the peer's identity
   * frame first, then these).
   */
  public static byte[][] replayBatch(ReplayFraming framing, EventMessage message) {
    return switch (Objects.requireNonNull(framing, "framing")) {
      case NO_TOPIC -> new byte[][] {EMPTY, seqBytes(message.seq()), message.payload()};
      case WITH_TOPIC ->
          new byte[][] {EMPTY, message.topicBytes(), seqBytes(message.seq()), message.payload()};
    };
  }

  /** The frames of the replay end marker as a DEALER receives them. */
  public static byte[][] replayEnd(ReplayFraming framing) {
    return switch (Objects.requireNonNull(framing, "framing")) {
      case NO_TOPIC -> new byte[][] {EMPTY, seqBytes(END_SEQ), EMPTY};
      case WITH_TOPIC -> new byte[][] {EMPTY, EMPTY, seqBytes(END_SEQ), EMPTY};
    };
  }

  private static void checkCount(byte[][] frames, int count, String what) {
    Objects.requireNonNull(frames, "frames");
    checkFrames(frames);
    if (frames.length != count) {
      throw new MalformedFramesException(what + " has " + count + " frames, got " + frames.length);
    }
  }

  private static void checkFrames(byte[][] frames) {
    for (int i = 0; i < frames.length; i++) {
      if (frames[i] == null) {
        throw new MalformedFramesException("frame " + i + " is null");
      }
    }
  }

  private static String topic(byte[] frame) {
    return new String(frame, StandardCharsets.UTF_8);
  }

  private static long seq(byte[][] frames, int i) {
    byte[] frame = frames[i];
    if (frame.length != 8) {
      throw new MalformedFramesException(
          "frame " + i + " (sequence number) must be 8 bytes big-endian, got " + frame.length);
    }
    long seq = 0;
    for (byte b : frame) {
      seq = (seq << 8) | (b & 0xffL);
    }
    return seq;
  }

  private static byte[] seqBytes(long seq) {
    byte[] bytes = new byte[8];
    for (int i = 0; i < 8; i++) {
      bytes[i] = (byte) (seq >>> (56 - 8 * i));
    }
    return bytes;
  }
}
