package io.kvindex.ingester;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.LoggerFactory;
import org.zeromq.SocketType;
import io.kvindex.wire.ReplayReply;
import io.kvindex.wire.WireFormatException;
import io.kvindex.wire.ZmqFrames;
import org.zeromq.ZContext;
import org.zeromq.ZFrame;
import org.zeromq.ZMQ;
import org.zeromq.ZMsg;

/**
 * Fetches a range of batches from a pod's replay ROUTER with a fresh DEALER. Not thread-safe: used
 * by one stream worker.
 *
 * <p>Accepts both vLLM framings (before and after PR #45177) through {@link ZmqFrames}; a malformed
 * reply ends the fetch as if the replay had gone silent.
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
      byte[][] request = ZmqFrames.replayRequest(fromSeq);
      dealer.send(request[0], ZMQ.SNDMORE);
      dealer.send(request[1], 0);
      List<Frame> out = new ArrayList<>();
      while (true) {
        ZMsg msg = ZMsg.recvMsg(dealer);
        if (msg == null) {
          return new Result(out, false);
        }
        Frame f;
        try {
          f = parse(msg);
        } catch (WireFormatException e) {
          LoggerFactory.getLogger(Replay.class)
              .warn("replay from {} sent a malformed reply: {}", endpoint, e.getMessage());
          return new Result(out, false);
        }
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
    byte[][] frames = new byte[msg.size()][];
    int i = 0;
    for (ZFrame f : msg) {
      frames[i++] = f.getData();
    }
    ReplayReply reply = ZmqFrames.parseReplay(frames);
    if (reply instanceof ReplayReply.Batch b) {
      return new Frame(b.message().seq(), b.message().payload());
    }
    return null;
  }
}
