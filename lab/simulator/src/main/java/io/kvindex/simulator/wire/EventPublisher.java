package io.kvindex.simulator.wire;

import io.kvindex.simulator.FaultKnobs;
import io.kvindex.simulator.PodConfig;
import io.kvindex.wire.EventMessage;
import io.kvindex.wire.MalformedFramesException;
import io.kvindex.wire.ReplayFraming;
import io.kvindex.wire.ReplayRequest;
import io.kvindex.wire.ZmqFrames;
import java.time.Duration;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZFrame;
import org.zeromq.ZMQ;
import org.zeromq.ZMsg;

/**
 * One engine's ZMQ side, as vLLM's {@code ZmqEventPublisher}: a PUB socket sending {@code [topic,
 * seq8, payload]} and an optional replay ROUTER answering from a ring of recent batches. A single
 * named thread owns both sockets; {@link #publish} only queues. Thread-safe.
 */
public final class EventPublisher implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(EventPublisher.class);
  private static final long IDLE_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

  /**
   * jeromq 0.6.0 now and then leaves a fresh TCP connection stuck in the ZMTP handshake (about one
   * in twenty on loopback); a short handshake timeout drops such a connection so the peer
   * reconnects. libzmq's default is 30 s.
   */
  private static final int HANDSHAKE_MILLIS = 1000;

  private record Outgoing(long seq, byte[] payload, long queuedNanos, int copies) {}

  private final String stream;
  private final ZContext context;
  private final String publishTarget;
  private final boolean bind;
  private final String replayBind;
  private final int highWaterMark;
  private final CountDownLatch opened = new CountDownLatch(1);
  private volatile RuntimeException openFailure;
  private ZMQ.Socket pub;
  private ZMQ.Socket router;
  private volatile String publishEndpoint;
  private volatile String replayEndpoint;
  private final String topic;
  private final ReplayFraming framing;
  private final ReplayRing ring;
  private final FaultKnobs faults;
  private final Random random;
  private final LinkedBlockingDeque<Outgoing> queue = new LinkedBlockingDeque<>();
  private final AtomicLong sent = new AtomicLong();
  private final Thread thread;
  private volatile boolean running = true;

  /**
   * Starts the publisher thread, which opens its sockets (bind or connect), and waits for that, so
   * a bad endpoint fails here.
   *
   * @param publish the PUB endpoint; bound when {@code bind}, else connected to
   * @param replayBind the ROUTER endpoint to bind, or {@code null} for no replay
   */
  public EventPublisher(
      ZContext context,
      String stream,
      String publish,
      boolean bind,
      String replayBind,
      PodConfig config,
      FaultKnobs faults,
      long seed) {
    this.stream = stream;
    this.topic = config.topic();
    this.framing = config.replayFraming();
    this.ring = new ReplayRing(config.replayBufferSteps());
    this.faults = faults;
    this.random = new Random(seed);
    this.context = context;
    this.publishTarget = publish;
    this.bind = bind;
    this.replayBind = replayBind;
    this.highWaterMark = config.highWaterMark();
    this.thread = new Thread(this::run, "zmq-publisher-" + stream);
    this.thread.setDaemon(true);
    this.thread.start();
    try {
      opened.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      running = false;
      throw new IllegalStateException("interrupted while opening " + stream, e);
    }
    if (openFailure != null) {
      throw openFailure;
    }
  }

  /** Runs on the publisher thread, which owns the sockets from creation to close. */
  private void open() {
    pub = context.createSocket(SocketType.PUB);
    pub.setSndHWM(highWaterMark);
    pub.setHandshakeIvl(HANDSHAKE_MILLIS);
    pub.setLinger(100);
    if (bind) {
      pub.bind(wildcardPort(publishTarget));
      publishEndpoint = pub.getLastEndpoint();
    } else {
      pub.connect(publishTarget);
      publishEndpoint = publishTarget;
    }
    if (replayBind != null) {
      router = context.createSocket(SocketType.ROUTER);
      router.setSndHWM(0);
      router.setHandshakeIvl(HANDSHAKE_MILLIS);
      router.setLinger(0);
      router.bind(wildcardPort(replayBind));
      replayEndpoint = router.getLastEndpoint();
    }
  }

  /** The PUB endpoint: the bound address (port resolved) or the one connected to. */
  public String publishEndpoint() {
    return publishEndpoint;
  }

  /** The bound replay endpoint, or {@code null}. */
  public String replayEndpoint() {
    return replayEndpoint;
  }

  /** Records the batch in the replay ring and queues it for sending. */
  public void publish(long seq, byte[] payload) {
    ring.add(seq, payload);
    int copies = copies();
    if (copies == 0) {
      return;
    }
    queue.addLast(new Outgoing(seq, livePayload(payload), System.nanoTime(), copies));
  }

  /** The payload as the live stream carries it: intact, or cut short by the garble fault. */
  private synchronized byte[] livePayload(byte[] payload) {
    if (faults.garbleFraction() > 0 && random.nextDouble() < faults.garbleFraction()) {
      return Arrays.copyOf(payload, payload.length / 2);
    }
    return payload;
  }

  /** The fault decision is taken when the batch is published: 0 (lost), 1, or 2 sends. */
  private synchronized int copies() {
    if (faults.silenced() || random.nextDouble() < faults.dropFraction()) {
      return 0;
    }
    return random.nextDouble() < faults.duplicateFraction() ? 2 : 1;
  }

  private synchronized boolean reorder() {
    return random.nextDouble() < faults.reorderFraction();
  }

  /** A restarted engine: the ring and anything not yet sent are gone. */
  public void restart() {
    queue.clear();
    ring.clear();
  }

  private void run() {
    try {
      open();
    } catch (RuntimeException e) {
      openFailure = e;
      closeSockets();
      return;
    } finally {
      opened.countDown();
    }
    try {
      while (running) {
        try {
          step();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        } catch (RuntimeException e) {
          if (!running) {
            return;
          }
          LOG.warn("stream {}: publisher step failed, going on", stream, e);
        }
      }
    } finally {
      closeSockets();
    }
  }

  private void closeSockets() {
    if (pub != null) {
      pub.close();
    }
    if (router != null) {
      router.close();
    }
  }

  private void step() throws InterruptedException {
    Outgoing next = queue.pollFirst(IDLE_WAIT_NANOS, TimeUnit.NANOSECONDS);
    if (next != null) {
      long waitNanos = next.queuedNanos() + faults.delay().toNanos() - System.nanoTime();
      if (waitNanos > 0) {
        queue.addFirst(next);
        TimeUnit.NANOSECONDS.sleep(Math.min(waitNanos, IDLE_WAIT_NANOS));
      } else if (faults.reorderFraction() > 0 && reorder() && !queue.isEmpty()) {
        Outgoing second = queue.pollFirst();
        sendLive(second);
        sendLive(next);
      } else {
        sendLive(next);
      }
    }
    serveReplay();
  }

  private void sendLive(Outgoing message) {
    for (int i = 0; i < message.copies(); i++) {
      byte[][] frames = ZmqFrames.live(new EventMessage(topic, message.seq(), message.payload()));
      pub.sendMore(frames[0]);
      pub.sendMore(frames[1]);
      pub.send(frames[2]);
      sent.incrementAndGet();
    }
  }

  private void serveReplay() {
    if (router == null) {
      return;
    }
    ZMsg request;
    while ((request = ZMsg.recvMsg(router, ZMQ.DONTWAIT)) != null) {
      byte[][] frames = new byte[request.size()][];
      int i = 0;
      for (ZFrame frame : request) {
        frames[i++] = frame.getData();
      }
      request.destroy();
      try {
        replay(ZmqFrames.parseReplayRequest(frames));
      } catch (MalformedFramesException e) {
        LOG.warn("stream {}: replay request ignored: {}", stream, e.getMessage());
      }
    }
  }

  private void replay(ReplayRequest request) {
    for (ReplayRing.Entry e : ring.from(request.startSeq())) {
      send(
          request.identity(),
          ZmqFrames.replayBatch(framing, new EventMessage(topic, e.seq(), e.payload())));
    }
    send(request.identity(), ZmqFrames.replayEnd(framing));
  }

  private void send(byte[] identity, byte[][] frames) {
    router.sendMore(identity);
    for (int i = 0; i < frames.length - 1; i++) {
      router.sendMore(frames[i]);
    }
    router.send(frames[frames.length - 1]);
  }

  /** jeromq picks a free port for {@code *}; port 0 is spelled that way for it. */
  private static String wildcardPort(String endpoint) {
    return endpoint.endsWith(":0") ? endpoint.substring(0, endpoint.length() - 1) + "*" : endpoint;
  }

  @Override
  public void close() {
    running = false;
    try {
      thread.join(Duration.ofSeconds(5).toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
