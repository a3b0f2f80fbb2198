package io.kvindex.ingester;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMsg;

/**
 * Fetches a range of batches from a pod's replay ROUTER with a fresh DEALER. Not thread-safe: used
 * by one stream worker.
 *
 * <p>Accepts both vLLM framings (before and after PR #45177): {@code [seq8, payload]} and {@code
 * [topic, seq8, payload]} after the DEALER's empty delimiter; the end marker is seq -1 or an empty
 * payload.
 */
final class Replay {

  /** One batch as received: its sequence and msgpack payload. */
  record Frame(long seq, byte[] payload) {}

  /**
   * What a replay returned.
   *
   * @param batches the batches, in the order received
   * @param ended true when the end marker arrived before the idle bound
   */
  record Result(List<Frame> batches, boolean ended) {
    long firstSeq() {
      return batches.isEmpty() ? -1 : batches.get(0).seq();
    }
  }

  private Replay() {}

  /**
   * Asks for every batch from {@code fromSeq} on; waits at most {@code idle} for each message.
   *
   * @throws IllegalStateException if the endpoint cannot be connected
   */
  static Result fetch(ZContext ctx, String endpoint, long fromSeq, Duration idle) {
    ZMQ.Socket dealer = ctx.createSocket(SocketType.DEALER);
    try {
      dealer.setLinger(0);
      dealer.setReceiveTimeOut((int) Math.max(1, idle.toMillis()));
      dealer.setRcvHWM(0);
      dealer.connect(endpoint);
      dealer.send(new byte[0], ZMQ.SNDMORE);
      dealer.send(ByteBuffer.allocate(8).putLong(fromSeq).array(), 0);
      List<Frame> out = new ArrayList<>();
      while (true) {
        ZMsg msg = ZMsg.recvMsg(dealer);
        if (msg == null) {
          return new Result(out, false);
        }
        Frame f = parse(msg);
        if (f == null) {
          return new Result(out, true);
        }
        out.add(f);
      }
    } finally {
      dealer.close();
    }
  }

  /** A data frame, or {@code null} for the end marker. */
  static Frame parse(ZMsg msg) {
    List<byte[]> frames = new ArrayList<>();
    msg.forEach(f -> frames.add(f.getData()));
    if (!frames.isEmpty() && frames.get(0).length == 0 && frames.size() > 2) {
      frames.remove(0); // the DEALER's empty delimiter
    }
    if (frames.size() < 2) {
      return null;
    }
    byte[] seqBytes = frames.get(frames.size() - 2);
    byte[] payload = frames.get(frames.size() - 1);
    long seq = seqBytes.length == 8 ? ByteBuffer.wrap(seqBytes).getLong() : -1;
    if (seq == -1 || payload.length == 0) {
      return null;
    }
    return new Frame(seq, payload);
  }
}
