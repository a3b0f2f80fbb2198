package io.kvindex.bench;

import io.kvindex.common.Check;
import io.kvindex.wire.EventMessage;
import io.kvindex.wire.ZmqFrames;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * Many pods' ZeroMQ PUB sockets that replay pre-encoded KV-event payloads, so that a publisher
 * costs the ingester under test as little CPU as possible: sending a payload only writes the send
 * time into its timestamp (the msgpack float64 right after the batch's array header) and hands the
 * three frames of vLLM's live message ({@code [topic, seq8, payload]}) to the socket. No replay
 * socket: the ingester treats a gap as unrecoverable and resumes, which loopback PUB with a high
 * water mark of a million messages does not cause. Not thread-safe: one thread creates, sends and
 * closes (as ZeroMQ sockets require).
 */
final class LightPublisher implements AutoCloseable {
  /** Where the float64 timestamp of an encoded batch starts: after 0x93 (array) and 0xcb. */
  static final int TIMESTAMP_OFFSET = 2;

  private final ZContext context = new ZContext();
  private final List<ZMQ.Socket> sockets = new ArrayList<>();
  private final List<String> endpoints = new ArrayList<>();
  private final long[] next;

  LightPublisher(int pods) {
    Check.atLeast(pods, 1, "pods");
    next = new long[pods];
    for (int p = 0; p < pods; p++) {
      ZMQ.Socket socket = context.createSocket(SocketType.PUB);
      socket.setSndHWM(1_000_000);
      socket.setLinger(0);
      int port = socket.bindToRandomPort("tcp://127.0.0.1");
      sockets.add(socket);
      endpoints.add("tcp://127.0.0.1:" + port);
    }
  }

  /** The PUB endpoint of each pod, in pod order. */
  List<String> endpoints() {
    return List.copyOf(endpoints);
  }

  /** Stamps {@code payload} with the time now and sends it as pod {@code pod}'s next batch. */
  void send(int pod, byte[] payload) {
    stamp(payload, System.currentTimeMillis() / 1000.0);
    byte[][] frames = ZmqFrames.live(new EventMessage("", next[pod]++, payload));
    ZMQ.Socket socket = sockets.get(pod);
    for (int i = 0; i < frames.length; i++) {
      socket.send(frames[i], i < frames.length - 1 ? ZMQ.SNDMORE : 0);
    }
  }

  /** Writes {@code seconds} over an encoded batch's timestamp. */
  static void stamp(byte[] payload, double seconds) {
    if (payload.length < TIMESTAMP_OFFSET + 8 || (payload[1] & 0xff) != 0xcb) {
      throw new IllegalArgumentException("not an encoded batch with a float64 timestamp");
    }
    ByteBuffer.wrap(payload).putDouble(TIMESTAMP_OFFSET, seconds);
  }

  @Override
  public void close() {
    sockets.forEach(ZMQ.Socket::close);
    context.close();
  }
}
