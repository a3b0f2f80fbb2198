package io.kvindex.service;

import com.sun.net.httpserver.HttpExchange;
import io.kvindex.service.HttpService.Handler;
import io.kvindex.service.HttpService.Probe;
import io.kvindex.service.HttpService.Request;
import io.kvindex.service.HttpService.Response;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The built-in routes of an {@link HttpService}, then its fallback. Thread-safe. */
record Routes(
    String name,
    Supplier<String> metrics,
    Supplier<Probe> health,
    Supplier<Probe> ready,
    Handler fallback,
    int maxBodyBytes,
    String bodyLimit,
    BearerAuth auth) {
  private static final Logger log = LoggerFactory.getLogger(HttpService.class);

  void serve(HttpExchange exchange) {
    try (exchange) {
      send(exchange, answer(exchange));
    } catch (IOException e) {
      log.debug(
          "{}: could not answer {} {}: {}",
          name,
          exchange.getRequestMethod(),
          exchange.getRequestURI(),
          e.toString());
    }
  }

  private Response answer(HttpExchange exchange) throws IOException {
    String method = exchange.getRequestMethod();
    String path = exchange.getRequestURI().getPath();
    try {
      String authorization = exchange.getRequestHeaders().getFirst("Authorization");
      Response refused = auth.refusal(path, authorization);
      if (refused != null) {
        return refused;
      }
      Response builtIn = builtIn(method, path);
      if (builtIn != null) {
        return builtIn;
      }
      byte[] body = body(exchange);
      if (body == null) {
        return Response.error(
            413, "the body is larger than " + maxBodyBytes + " bytes, " + bodyLimit);
      }
      return fallback.handle(new Request(method, exchange.getRequestURI(), authorization, body));
    } catch (IllegalArgumentException e) {
      return Response.error(400, e.getMessage());
    } catch (RuntimeException e) {
      log.error("{}: request {} {} failed", name, method, exchange.getRequestURI(), e);
      return Response.error(500, "internal error: " + e);
    }
  }

  private Response builtIn(String method, String path) {
    Supplier<Probe> probe =
        switch (path) {
          case "/healthz" -> health;
          case "/readyz" -> ready;
          default -> null;
        };
    if (probe == null && !(path.equals("/metrics") && metrics != null)) {
      return null;
    }
    if (!method.equals("GET") && !method.equals("HEAD")) {
      return Response.notAllowed("GET");
    }
    if (probe == null) {
      return Response.text(200, HttpService.PROMETHEUS, metrics.get());
    }
    Probe p = probe.get();
    String text = p.text().endsWith("\n") ? p.text() : p.text() + "\n";
    return Response.text(p.ok() ? 200 : 503, "text/plain; charset=utf-8", text);
  }

  /** The body, or null when it is over the limit (said by its length, or found reading it). */
  private byte[] body(HttpExchange exchange) throws IOException {
    String length = exchange.getRequestHeaders().getFirst("Content-Length");
    if (length != null && declared(length) > maxBodyBytes) {
      return null;
    }
    try (InputStream in = exchange.getRequestBody()) {
      byte[] body = in.readNBytes(maxBodyBytes + 1);
      return body.length > maxBodyBytes ? null : body;
    }
  }

  /** The Content-Length, or 0 when it is not a number this can read (then the read decides). */
  private static long declared(String length) {
    try {
      return Long.parseLong(length.trim());
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  private static void send(HttpExchange exchange, Response response) throws IOException {
    byte[] bytes = response.body();
    exchange.getResponseHeaders().set("Content-Type", response.contentType());
    response.headers().forEach(exchange.getResponseHeaders()::set);
    boolean head = exchange.getRequestMethod().equals("HEAD");
    exchange.sendResponseHeaders(response.status(), bytes.length == 0 || head ? -1 : bytes.length);
    if (bytes.length > 0 && !head) {
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(bytes);
      }
    }
  }
}
