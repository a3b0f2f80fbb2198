package io.kvindex.ingester.stream;

import io.kvindex.wire.EventMessage;
import io.kvindex.wire.ReplayReply;
import io.kvindex.wire.WireFormatException;
import io.kvindex.wire.ZmqFrames;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.LoggerFactory;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZFrame;
import org.zeromq.ZMQ;
import org.zeromq.ZMsg;

/**
 * Fetches a range of batches from a pod's replay ROUTER with a fresh DEALER. Thread-safe
 * (stateless; each fetch has its own socket).
 *
 * <p>Accepts both vLLM framings (before and after PR #45177) through {@link ZmqFrames}; a malformed
 * reply ends the fetch as if the replay had gone silent.
 */
public final class Replay {

  /**
   * What a replay returned.
   *
   * @param batches the batches, in the order received (none when too large)
   * @param ended true when the end marker arrived before the idle bound
   * @param tooLarge true when the replay sent more than the bound: what it sent was dropped
   */
  public record Result(List<EventMessage> batches, boolean ended, boolean tooLarge) {
    Result(List<EventMessage> batches, boolean ended) {
      this(batches, ended, false);
    }

    public long firstSeq() {
      return batches.isEmpty() ? -1 : batches.get(0).seq();
    }
  }

  private static final int ASK_AGAIN_MS = 200;

  private Replay() {}

  /**
   * Asks for every batch from {@code fromSeq} on; waits at most {@code idle} for each message.
   *
   * <p>A connection that is not answered within {@value #ASK_AGAIN_MS} ms is replaced by a new one
   * asking again, until {@code idle} has passed (a jeromq ROUTER can lose a fresh peer's request);
   * a late answer on an abandoned connection is discarded with its socket.
   */
  public static Result fetch(ZContext ctx, String endpoint, long fromSeq, Duration idle) {
    return fetch(ctx, endpoint, fromSeq, idle, Long.MAX_VALUE, -1);
  }

  /**
   * {@link #fetch(ZContext, String, long, Duration)} within memory bounds: at most {@code maxBytes}
   * of payloads in all (past it the replay is dropped, {@link Result#tooLarge}), and no ZeroMQ
   * message over {@code maxMessageBytes} ({@code -1}: no limit; a larger one closes the connection,
   * so the replay goes silent).
   */
  public static Result fetch(
      ZContext ctx,
      String endpoint,
      long fromSeq,
      Duration idle,
      long maxBytes,
      long maxMessageBytes) {
    long end = System.nanoTime() + idle.toNanos();
    do {
      ZMQ.Socket dealer = ctx.createSocket(SocketType.DEALER);
      try {
        dealer.setLinger(0);
        dealer.setRcvHWM(0);
        dealer.setMaxMsgSize(maxMessageBytes);
        dealer.setReceiveTimeOut(ASK_AGAIN_MS);
        dealer.connect(endpoint);
        byte[][] request = ZmqFrames.replayRequest(fromSeq);
        dealer.send(request[0], ZMQ.SNDMORE);
        dealer.send(request[1], 0);
        ZMsg first = ZMsg.recvMsg(dealer);
        if (first != null) {
          dealer.setReceiveTimeOut((int) Math.max(1, idle.toMillis()));
          return read(dealer, first, endpoint, maxBytes);
        }
      } finally {
        dealer.close();
      }
    } while (System.nanoTime() - end < 0);
    return new Result(List.of(), false);
  }

  private static Result read(ZMQ.Socket dealer, ZMsg first, String endpoint, long maxBytes) {
    List<EventMessage> out = new ArrayList<>();
    long bytes = 0;
    for (ZMsg msg = first; msg != null; msg = ZMsg.recvMsg(dealer)) {
      ReplayReply reply;
      try {
        reply = ZmqFrames.parseReplay(frames(msg));
      } catch (WireFormatException e) {
        LoggerFactory.getLogger(Replay.class)
            .warn("replay from {} sent a malformed reply: {}", endpoint, e.getMessage());
        return new Result(out, false);
      }
      if (!(reply instanceof ReplayReply.Batch b)) {
        return new Result(out, true);
      }
      bytes += b.message().payload().length;
      if (bytes > maxBytes) {
        LoggerFactory.getLogger(Replay.class)
            .warn(
                "replay from {} sent more than {} bytes of batches from {}; dropped (raise"
                    + " --max-replay-bytes if its ring is really that large)",
                endpoint,
                maxBytes,
                out.isEmpty() ? b.message().seq() : out.get(0).seq());
        return new Result(List.of(), false, true);
      }
      out.add(b.message());
    }
    return new Result(out, false);
  }

  /** A ZeroMQ message's frames as byte arrays. */
  static byte[][] frames(ZMsg msg) {
    byte[][] frames = new byte[msg.size()][];
    int i = 0;
    for (ZFrame f : msg) {
      frames[i++] = f.getData();
    }
    return frames;
  }
}
