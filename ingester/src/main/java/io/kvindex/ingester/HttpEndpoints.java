package io.kvindex.ingester;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/** {@code /metrics}, {@code /healthz} and {@code /readyz} on the JDK HTTP server. Thread-safe. */
final class HttpEndpoints implements AutoCloseable {

  /** A probe's answer. */
  record Status(boolean ok, String text) {}

  private final HttpServer server;
  private final ThreadPoolExecutor executor;

  HttpEndpoints(
      String host,
      int port,
      Supplier<String> metrics,
      Supplier<Status> health,
      Supplier<Status> ready)
      throws IOException {
    server = HttpServer.create(new InetSocketAddress(host, port), 16);
    executor =
        new ThreadPoolExecutor(
            1,
            2,
            30,
            TimeUnit.SECONDS,
            new ArrayBlockingQueue<>(64),
            r -> {
              Thread t = new Thread(r, "kvindex-ingester-http");
              t.setDaemon(true);
              return t;
            },
            new ThreadPoolExecutor.AbortPolicy());
    server.setExecutor(executor);
    server.createContext(
        "/metrics", ex -> send(ex, 200, "text/plain; version=0.0.4; charset=utf-8", metrics.get()));
    server.createContext("/healthz", ex -> probe(ex, health.get()));
    server.createContext("/readyz", ex -> probe(ex, ready.get()));
    server.start();
  }

  int port() {
    return server.getAddress().getPort();
  }

  private static void probe(HttpExchange ex, Status s) throws IOException {
    send(ex, s.ok() ? 200 : 503, "text/plain; charset=utf-8", s.text());
  }

  private static void send(HttpExchange ex, int code, String type, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    ex.getResponseHeaders().set("Content-Type", type);
    ex.sendResponseHeaders(code, bytes.length);
    try (OutputStream out = ex.getResponseBody()) {
      out.write(bytes);
    }
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }
}
