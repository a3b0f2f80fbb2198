package io.kvindex.ingester.stream;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/** The live socket over real jeromq PUB and SUB sockets on loopback. */
class LiveSocketTest {
  @Test
  void waiting_isTrueWhileMessagesAreUnreadAndFalseOnceRead() throws Exception {
    try (ZContext ctx = new ZContext()) {
      ZMQ.Socket pub = ctx.createSocket(SocketType.PUB);
      pub.setLinger(0);
      int port = pub.bindToRandomPort("tcp://127.0.0.1");
      ZMQ.Socket sub = ctx.createSocket(SocketType.SUB);
      sub.setLinger(0);
      sub.setReceiveTimeOut(LiveSocket.RECEIVE_TIMEOUT_MS);
      sub.subscribe(new byte[0]);
      sub.connect("tcp://127.0.0.1:" + port);
      try (LiveSocket live = new LiveSocket(sub, null, null)) {
        // A PUB drops what it sends before the subscription arrives: send until one gets through.
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        boolean through = false;
        while (!through && System.nanoTime() < deadline) {
          send(pub);
          through = !(live.receive() instanceof LiveSocket.Nothing);
        }
        assertThat(through).as("the subscription reached the publisher").isTrue();
        while (!(live.receive() instanceof LiveSocket.Nothing)) {
          // drain the rest of the probes
        }
        assertThat(live.waiting()).isFalse();

        for (int i = 0; i < 3; i++) {
          send(pub);
        }
        long until = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        while (!live.waiting() && System.nanoTime() < until) {
          Thread.sleep(5);
        }
        assertThat(live.waiting()).as("three messages sent, none read").isTrue();
        for (int i = 0; i < 3; i++) {
          assertThat(live.receive()).isNotInstanceOf(LiveSocket.Nothing.class);
        }
        assertThat(live.waiting()).isFalse();
      }
    }
  }

  private static void send(ZMQ.Socket pub) {
    pub.send("kv".getBytes(StandardCharsets.UTF_8), ZMQ.SNDMORE);
    pub.send(new byte[8], ZMQ.SNDMORE);
    pub.send(new byte[] {(byte) 0x90}, 0);
  }
}
