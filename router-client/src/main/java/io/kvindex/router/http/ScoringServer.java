package io.kvindex.router.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.kvindex.common.KvIndexException;
import io.kvindex.router.KvRouter;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP scoring service for gateways not on the JVM: {@code POST /score}, {@code POST /query}
 * (Dynamo and Mooncake indexer style), {@code GET /metrics}, {@code /healthz} and {@code /readyz}.
 * Thread-safe.
 *
 * <p>Errors are {@code {"error": "..."}}: 400 for bad input, 404 for an unknown route, 405 for a
 * wrong method, 503 when the index is unavailable, 500 for errors retrying cannot fix.
 */
public final class ScoringServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(ScoringServer.class);

  /** The largest body accepted: about a million token ids. */
  static final int MAX_BODY_BYTES = 8 << 20;

  private final HttpServer server;
  private final ThreadPoolExecutor executor;

  private ScoringServer(HttpServer server, ThreadPoolExecutor executor) {
    this.server = server;
    this.executor = executor;
  }

  /**
   * Starts serving {@code router} on {@code address} (port 0 picks a free port).
   *
   * @param threads request threads; requests beyond them queue (up to 1024 per thread), then run on
   *     the accepting thread, which slows accepting down
   * @throws IOException if the address cannot be bound
   */
  public static ScoringServer start(
      KvRouter router, PrometheusMeterRegistry registry, InetSocketAddress address, int threads)
      throws IOException {
    if (threads <= 0) {
      throw new IllegalArgumentException("threads must be > 0, got " + threads);
    }
    ThreadPoolExecutor executor = executor(threads);
    HttpServer server = HttpServer.create(address, 128);
    server.setExecutor(executor);
    Routes routes = new Routes(router, registry);
    server.createContext("/", exchange -> serve(exchange, routes));
    server.start();
    return new ScoringServer(server, executor);
  }

  private static ThreadPoolExecutor executor(int threads) {
    AtomicInteger n = new AtomicInteger();
    return new ThreadPoolExecutor(
        threads,
        threads,
        0,
        TimeUnit.SECONDS,
        new ArrayBlockingQueue<>(1024 * threads),
        r -> {
          Thread t = new Thread(r, "kvindex-router-http-" + n.incrementAndGet());
          t.setDaemon(true);
          return t;
        },
        new ThreadPoolExecutor.CallerRunsPolicy());
  }

  /** The bound address (with the real port when 0 was asked for). */
  public InetSocketAddress address() {
    return server.getAddress();
  }

  /** Stops accepting, lets running requests finish for up to a second, then stops. */
  @Override
  public void close() {
    server.stop(1);
    executor.shutdown();
  }

  private static void serve(HttpExchange exchange, Routes routes) {
    try (exchange) {
      Response response;
      try {
        response =
            routes.handle(exchange.getRequestMethod(), exchange.getRequestURI(), body(exchange));
      } catch (BadRequestException | IllegalArgumentException e) {
        response = Response.error(400, e.getMessage());
      } catch (KvIndexException e) {
        log.warn("request {} {} failed", exchange.getRequestMethod(), exchange.getRequestURI(), e);
        response = Response.error(500, e.getMessage());
      } catch (RuntimeException e) {
        log.error("request {} {} failed", exchange.getRequestMethod(), exchange.getRequestURI(), e);
        response = Response.error(500, "internal error: " + e);
      }
      send(exchange, response);
    } catch (IOException e) {
      log.debug(
          "could not answer {} {}: {}",
          exchange.getRequestMethod(),
          exchange.getRequestURI(),
          e.toString());
    }
  }

  private static byte[] body(HttpExchange exchange) throws IOException {
    try (InputStream in = exchange.getRequestBody()) {
      byte[] body = in.readNBytes(MAX_BODY_BYTES + 1);
      if (body.length > MAX_BODY_BYTES) {
        throw new BadRequestException("the body is larger than " + MAX_BODY_BYTES + " bytes");
      }
      return body;
    }
  }

  private static void send(HttpExchange exchange, Response response) throws IOException {
    byte[] bytes = response.body();
    exchange.getResponseHeaders().set("Content-Type", response.contentType());
    exchange.sendResponseHeaders(response.status(), bytes.length == 0 ? -1 : bytes.length);
    if (bytes.length > 0) {
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(bytes);
      }
    }
  }

  /** One HTTP answer. */
  record Response(int status, String contentType, byte[] body) {
    static Response json(int status, JsonNode node) {
      try {
        return new Response(status, "application/json", Json.MAPPER.writeValueAsBytes(node));
      } catch (IOException e) {
        throw new IllegalStateException("could not write JSON", e);
      }
    }

    static Response error(int status, String message) {
      ObjectNode node = Json.MAPPER.createObjectNode();
      node.put("error", message == null ? "unknown error" : message);
      return json(status, node);
    }

    static Response text(int status, String contentType, String text) {
      return new Response(status, contentType, text.getBytes(StandardCharsets.UTF_8));
    }
  }
}
