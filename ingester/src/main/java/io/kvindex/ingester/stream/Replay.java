package io.kvindex.ingester.stream;

import io.kvindex.wire.EventMessage;
import io.kvindex.wire.ReplayReply;
import io.kvindex.wire.WireFormatException;
import io.kvindex.wire.ZmqFrames;
import java.time.Duration;
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

  /** Takes a replay's batches one by one as they are read. */
  interface Reader {
    /**
     * Takes one replayed batch; false: the replay is cut here, before this batch (the rest is left
     * to a later replay).
     */
    boolean take(EventMessage message);
  }

  /**
   * How a replay read with a {@link Reader} ended.
   *
   * @param ended the end marker arrived
   * @param cut the reader stopped it before its end
   */
  record Read(boolean ended, boolean cut) {}

  private static final int ASK_AGAIN_MS = 200;

  /**
   * The most replay messages a DEALER holds unread: the rest waits at the pod (a ROUTER queues what
   * its peer has not taken), so that a window cut short leaves nothing more in this process.
   */
  static final int RECEIVE_HWM = 32;

  private Replay() {}

  /**
   * Asks for every batch from {@code fromSeq} on, waiting at most {@code idle} for each message,
   * and hands each batch to {@code reader} as it is read, until the reader cuts the replay, its end
   * marker, or {@code idle} without a message.
   *
   * <p>A connection that is not answered within {@value #ASK_AGAIN_MS} ms is replaced by a new one
   * asking again, until {@code idle} has passed (a jeromq ROUTER can lose a fresh peer's request);
   * a late answer on an abandoned connection is discarded with its socket. No ZeroMQ message over
   * {@code maxMessageBytes} is accepted ({@code -1}: no limit; a larger one closes the connection,
   * so the replay goes silent); {@code budget}, if not null, counts what each connection has
   * received and not yet handed over ({@link MemoryBudget.Use#REPLAY}).
   */
  static Read fetch(
      ZContext ctx,
      String endpoint,
      long fromSeq,
      Duration idle,
      long maxMessageBytes,
      MemoryBudget budget,
      Reader reader) {
    long end = System.nanoTime() + idle.toNanos();
    do {
      MemoryBudget.Pipe pipe = budget == null ? null : budget.pipe(MemoryBudget.Use.REPLAY);
      ZMQ.Socket dealer = ctx.createSocket(SocketType.DEALER);
      try {
        dealer.setLinger(0);
        dealer.setRcvHWM(RECEIVE_HWM);
        dealer.setMaxMsgSize(maxMessageBytes);
        if (pipe != null) {
          dealer.setMsgAllocator(pipe);
        }
        dealer.setReceiveTimeOut(ASK_AGAIN_MS);
        dealer.connect(endpoint);
        byte[][] request = ZmqFrames.replayRequest(fromSeq);
        dealer.send(request[0], ZMQ.SNDMORE);
        dealer.send(request[1], 0);
        ZMsg first = received(dealer, pipe);
        if (first != null) {
          dealer.setReceiveTimeOut((int) Math.max(1, idle.toMillis()));
          return read(dealer, first, endpoint, pipe, reader);
        }
      } finally {
        dealer.close();
        if (pipe != null) {
          pipe.close(); // what the connection held unread is gone with its socket
        }
      }
    } while (System.nanoTime() - end < 0);
    return new Read(false, false);
  }

  private static ZMsg received(ZMQ.Socket dealer, MemoryBudget.Pipe pipe) {
    ZMsg msg = ZMsg.recvMsg(dealer);
    if (msg != null && pipe != null) {
      msg.forEach(f -> pipe.read(f.size()));
    }
    return msg;
  }

  private static Read read(
      ZMQ.Socket dealer, ZMsg first, String endpoint, MemoryBudget.Pipe pipe, Reader reader) {
    for (ZMsg msg = first; msg != null; msg = received(dealer, pipe)) {
      ReplayReply reply;
      try {
        reply = ZmqFrames.parseReplay(frames(msg));
      } catch (WireFormatException e) {
        LoggerFactory.getLogger(Replay.class)
            .warn("replay from {} sent a malformed reply: {}", endpoint, e.getMessage());
        return new Read(false, false);
      }
      if (!(reply instanceof ReplayReply.Batch b)) {
        return new Read(true, false);
      }
      if (!reader.take(b.message())) {
        return new Read(false, true);
      }
    }
    return new Read(false, false);
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
