package io.kvindex.ingester.stream;

import io.kvindex.ingester.Shared;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.wire.EventMessage;
import io.kvindex.wire.WireFormatException;
import io.kvindex.wire.ZmqFrames;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.zeromq.SocketType;
import org.zeromq.ZMQ;
import org.zeromq.ZMQException;
import org.zeromq.ZMsg;

/**
 * A stream's SUB socket: connected to the pod's publisher (or bound, for a publisher that connects
 * out), subscribed to its topic, reconnecting with ZeroMQ's own jittered backoff. Not thread-safe:
 * a socket stays on the thread that opened it.
 *
 * <p>Whether it is connected is the stream's proof of life while its engine publishes nothing: so
 * the socket sends ZMTP heartbeats ({@value #HEARTBEAT_IVL_MS} ms apart; the publisher's ZeroMQ
 * answers them itself), and drops a connection that answers nothing for {@value
 * #HEARTBEAT_TIMEOUT_MS} ms, as a host that vanished without a reset would.
 */
final class LiveSocket implements AutoCloseable {
  /** How long one receive waits, so that the worker's loop sees its other work. */
  static final int RECEIVE_TIMEOUT_MS = 50;

  /**
   * The most live messages the socket holds unread (its receive high-water mark, unless {@code
   * --max-pending-batches} is lower). The worker reads them at every step and between the calls of
   * a backlog; while it cannot, the publisher drops what would pass the mark, and the gap is
   * replayed. Their bytes count in the memory budget as they arrive ({@link MemoryBudget.Pipe}).
   */
  static final int RECEIVE_HWM = 256;

  /** What one receive got. */
  sealed interface Received permits Nothing, Message, Garbled {}

  /** Nothing within the receive timeout. */
  record Nothing() implements Received {}

  /** A live batch. */
  record Message(EventMessage message) implements Received {}

  /** Frames that are not [topic, seq8, payload]. */
  record Garbled(String why) implements Received {}

  /** How long the connection may be quiet before a ZMTP heartbeat is sent. */
  static final int HEARTBEAT_IVL_MS = 1000;

  /** How long a heartbeat may go unanswered (by anything) before the connection is dropped. */
  static final int HEARTBEAT_TIMEOUT_MS = 5000;

  private static final AtomicLong MONITORS = new AtomicLong();

  private final ZMQ.Socket socket;

  /** A PAIR socket receiving {@code socket}'s connection events; null when not monitored. */
  private final ZMQ.Socket events;

  /** What the socket received and was not read yet, counted in the memory budget; or null. */
  private final MemoryBudget.Pipe pipe;

  private int connections;
  private int open;
  private boolean again;

  LiveSocket(ZMQ.Socket socket, ZMQ.Socket events, MemoryBudget.Pipe pipe) {
    this.socket = socket;
    this.events = events;
    this.pipe = pipe;
  }

  /**
   * Opens the socket of one rank of a pod.
   *
   * @throws ZMQException or {@link IllegalArgumentException} if the endpoint cannot be used now
   */
  static LiveSocket open(Shared shared, MemoryBudget budget, PodSpec pod, int rank) {
    MemoryBudget.Pipe pipe = budget.pipe(MemoryBudget.Use.LIVE);
    ZMQ.Socket s = shared.zmq().createSocket(SocketType.SUB);
    ZMQ.Socket events = null;
    try {
      s.setLinger(0);
      s.setRcvHWM(Math.min(shared.config().maxPendingBatches(), RECEIVE_HWM));
      s.setMaxMsgSize(shared.config().memoryBounds().messageBytes());
      s.setMsgAllocator(pipe);
      s.setReceiveTimeOut(RECEIVE_TIMEOUT_MS);
      Duration min = shared.config().reconnectMin();
      s.setReconnectIVL(min.toMillis() + ThreadLocalRandom.current().nextLong(min.toMillis() + 1));
      s.setReconnectIVLMax(shared.config().reconnectMax().toMillis());
      s.setHeartbeatIvl(HEARTBEAT_IVL_MS);
      s.setHeartbeatTimeout(HEARTBEAT_TIMEOUT_MS);
      s.subscribe(pod.topic().getBytes(StandardCharsets.UTF_8));
      // Monitored before it connects, so that the first connection is counted as the first.
      String address = "inproc://kvindex-live-" + MONITORS.incrementAndGet();
      if (s.monitor(address, ZMQ.EVENT_CONNECTED | ZMQ.EVENT_ACCEPTED | ZMQ.EVENT_DISCONNECTED)) {
        events = shared.zmq().createSocket(SocketType.PAIR);
        events.connect(address);
      }
      if (pod.bind()) {
        s.bind(pod.publisherEndpoint(rank));
      } else {
        s.connect(pod.publisherEndpoint(rank));
      }
      return new LiveSocket(s, events, pipe);
    } catch (ZMQException | IllegalArgumentException e) {
      if (events != null) {
        events.close();
      }
      s.close();
      pipe.close();
      throw e;
    }
  }

  /**
   * Whether the socket has connected again (or accepted another connection) since the last call,
   * after its first connection: the publisher at the other end may be another process now.
   */
  boolean reconnected() {
    drainEvents();
    boolean was = again;
    again = false;
    return was;
  }

  /**
   * Whether the socket holds a connection to a publisher now (one that answers its heartbeats);
   * true when it cannot tell (no monitor).
   */
  boolean connected() {
    drainEvents();
    return events == null || open > 0;
  }

  private void drainEvents() {
    ZMQ.Event e;
    while (events != null && (e = ZMQ.Event.recv(events, ZMQ.DONTWAIT)) != null) {
      if (e.getEvent() == ZMQ.EVENT_DISCONNECTED) {
        open = Math.max(0, open - 1);
      } else {
        open++;
        again |= ++connections > 1;
      }
    }
  }

  /** The next live message, waiting at most {@value #RECEIVE_TIMEOUT_MS} ms. */
  Received receive() {
    ZMsg msg = ZMsg.recvMsg(socket);
    if (msg == null) {
      return new Nothing();
    }
    if (pipe != null) {
      msg.forEach(f -> pipe.read(f.size()));
    }
    try {
      return new Message(ZmqFrames.parseLive(Replay.frames(msg)));
    } catch (WireFormatException e) {
      return new Garbled(e.getMessage());
    }
  }

  /**
   * Whether a message is waiting to be received now: a rebuild is not shown while the socket still
   * holds live batches the worker has not read (it read none while it replayed).
   */
  boolean waiting() {
    return (socket.getEvents() & ZMQ.Poller.POLLIN) != 0;
  }

  @Override
  public void close() {
    if (events != null) {
      socket.monitor(null, 0);
      events.close();
    }
    socket.close();
    if (pipe != null) {
      pipe.close();
    }
  }
}
