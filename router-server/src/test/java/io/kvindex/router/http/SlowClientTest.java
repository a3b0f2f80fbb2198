package io.kvindex.router.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.kvindex.index.PrefixIndex;
import io.kvindex.redis.RedisConnector;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Slow clients against a router in a JVM of its own: the JDK server's timeouts are process-wide
 * (read once, at its first server), so this test's own JVM, which has served with the defaults,
 * cannot show them.
 */
@UsesRedis
class SlowClientTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final Duration CUT_OFF_WAIT = Duration.ofSeconds(30);

  @Test
  void slowClients_areCutOffAtTheTimeoutsWhileOthersAreServed(
      RedisStandalone redis, @TempDir Path dir) throws Exception {
    // A router opens an index an ingester created; this test runs none, so creates it as one would.
    try (RedisConnector connector = RedisConnector.connect(redis.uri().toURI().toString())) {
      PrefixIndex.builder().redis(connector).build().close();
    }
    Process router =
        start(
            dir,
            "--redis-uri",
            redis.uri().toURI().toString(),
            "--listen",
            "127.0.0.1:0",
            "--model",
            "m=token:16",
            "--lookup-budget",
            "1s",
            "--threads",
            "3",
            "--read-timeout",
            "1s",
            "--idle-timeout",
            "2s");
    try {
      int port = port(router, dir);
      List<Socket> sockets = new ArrayList<>();
      try {
        Socket halfHeaders = open(port, sockets, "POST /score HTTP/1.1\r\nHost: 127.0.0.1\r\nCont");
        Socket halfBody =
            open(
                port,
                sockets,
                "POST /score HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{\"model\"");
        Socket silent = open(port, sockets, "");
        Socket idle = open(port, sockets, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        assertThat(readResponse(idle)).startsWith("HTTP/1.1 200").endsWith("ok\n");

        // Two request threads are held by the half requests; the third serves everyone else.
        HttpClient client = HttpClient.newHttpClient();
        for (int i = 0; i < 5; i++) {
          assertThat(get(client, port, "/healthz").statusCode()).isEqualTo(200);
          assertThat(get(client, port, "/readyz").statusCode()).isEqualTo(200);
        }

        assertCutOff(halfHeaders, "half the headers");
        assertCutOff(halfBody, "half the body");
        assertCutOff(silent, "nothing sent");
        assertCutOff(idle, "idle after a request");
        assertThat(get(HttpClient.newHttpClient(), port, "/healthz").statusCode()).isEqualTo(200);
      } finally {
        for (Socket s : sockets) {
          s.close();
        }
      }
    } finally {
      router.destroy();
      if (!router.waitFor(30, TimeUnit.SECONDS)) {
        router.destroyForcibly();
      }
    }
  }

  private static Process start(Path dir, String... args) throws IOException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(RouterMain.class.getName());
    command.addAll(List.of(args));
    return new ProcessBuilder(command)
        .redirectOutput(dir.resolve("out").toFile())
        .redirectError(dir.resolve("err").toFile())
        .start();
  }

  /** The port the router says it listens on, once it says so. */
  private static int port(Process router, Path dir) throws IOException, InterruptedException {
    Matcher port = Pattern.compile("listening on http://127.0.0.1:(\\d+)").matcher("");
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (System.nanoTime() < deadline && router.isAlive()) {
      if (port.reset(Files.readString(dir.resolve("out"))).find()) {
        return Integer.parseInt(port.group(1));
      }
      Thread.sleep(50);
    }
    return fail(
        "the router did not start: "
            + Files.readString(dir.resolve("out"))
            + Files.readString(dir.resolve("err")));
  }

  private static Socket open(int port, List<Socket> sockets, String sent) throws IOException {
    Socket s = new Socket(InetAddress.getLoopbackAddress(), port);
    sockets.add(s);
    OutputStream out = s.getOutputStream();
    out.write(sent.getBytes(StandardCharsets.US_ASCII));
    out.flush();
    return s;
  }

  /** One whole response (headers, then Content-Length bytes), as text. */
  private static String readResponse(Socket s) throws IOException {
    s.setSoTimeout((int) CUT_OFF_WAIT.toMillis());
    InputStream in = s.getInputStream();
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    while (!head.toString(StandardCharsets.US_ASCII).endsWith("\r\n\r\n")) {
      int b = in.read();
      assertThat(b).as("a whole response before the connection ends").isNotNegative();
      head.write(b);
    }
    String headers = head.toString(StandardCharsets.US_ASCII);
    Matcher length = Pattern.compile("(?i)content-length: *(\\d+)").matcher(headers);
    int n = length.find() ? Integer.parseInt(length.group(1)) : 0;
    return headers + new String(in.readNBytes(n), StandardCharsets.US_ASCII);
  }

  private static void assertCutOff(Socket s, String what) throws IOException {
    s.setSoTimeout((int) CUT_OFF_WAIT.toMillis());
    try {
      assertThat(s.getInputStream().read()).as(what + ": the server closes").isEqualTo(-1);
    } catch (SocketTimeoutException e) {
      fail(what + ": still open after " + CUT_OFF_WAIT.toSeconds() + " s", e);
    } catch (SocketException e) {
      // reset by the server: cut off as well
    }
  }

  private static HttpResponse<String> get(HttpClient client, int port, String path)
      throws IOException, InterruptedException {
    return client.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .timeout(Duration.ofSeconds(10))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
