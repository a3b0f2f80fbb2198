package io.kvindex.service;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.kvindex.common.Check;
import io.kvindex.common.Threads;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP endpoint of every kvindex process (ingester, router, simulated pod) on the JDK's HTTP
 * server: {@code GET /metrics} (Prometheus text), {@code GET /healthz} and {@code GET /readyz} (200
 * or 503 with a line of text saying why), and whatever else the process routes through its {@link
 * Handler}. Requests run on a named pool of a fixed size over a bounded queue; past the queue the
 * accepting thread runs the request itself, which slows accepting down instead of dropping work.
 * Thread-safe.
 *
 * <p>Errors are {@code {"error": "..."}}: 413 for a body over the limit, 400 for a handler's {@link
 * IllegalArgumentException}, 404 for an unknown route, 405 for a wrong method, 500 otherwise.
 */
public final class HttpService implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(HttpService.class);
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The content type of Prometheus's text format. */
  public static final String PROMETHEUS = "text/plain; version=0.0.4; charset=utf-8";

  /** A probe's answer: healthy or not, and a line saying why. */
  public record Probe(boolean ok, String text) {
    public static Probe ok(String text) {
      return new Probe(true, text);
    }

    public static Probe failing(String text) {
      return new Probe(false, text);
    }
  }

  /** One request, its body read whole (within the limit). */
  public record Request(String method, URI uri, String authorization, byte[] body) {
    public String path() {
      return uri.getPath();
    }

    /** The value of a query parameter, or null. */
    public String query(String name) {
      String q = uri.getRawQuery();
      if (q == null) {
        return null;
      }
      for (String pair : q.split("&")) {
        int eq = pair.indexOf('=');
        if ((eq < 0 ? pair : pair.substring(0, eq)).equals(name)) {
          return eq < 0
              ? ""
              : java.net.URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
        }
      }
      return null;
    }
  }

  /** One answer. */
  public record Response(int status, String contentType, byte[] body) {
    public static Response text(int status, String contentType, String text) {
      return new Response(status, contentType, text.getBytes(StandardCharsets.UTF_8));
    }

    /** A JSON answer of any Jackson-serialisable value. */
    public static Response json(int status, Object value) {
      try {
        return new Response(status, "application/json", JSON.writeValueAsBytes(value));
      } catch (IOException e) {
        throw new UncheckedIOException("could not write JSON", e);
      }
    }

    /** {@code {"error": message}}. */
    public static Response error(int status, String message) {
      ObjectNode node = JSON.createObjectNode();
      node.put("error", message == null ? "unknown error" : message);
      return json(status, node);
    }

    public static Response notAllowed(String allowed) {
      return error(405, "method not allowed; use " + allowed);
    }
  }

  /** Answers the requests that are not one of the built-in routes. */
  @FunctionalInterface
  public interface Handler {
    Response handle(Request request) throws IOException;
  }

  private final HttpServer server;
  private final ThreadPoolExecutor executor;

  private HttpService(HttpServer server, ThreadPoolExecutor executor) {
    this.server = server;
    this.executor = executor;
  }

  public static Builder builder(String name) {
    return new Builder(name);
  }

  /** The bound address (with the real port when 0 was asked for). */
  public InetSocketAddress address() {
    return server.getAddress();
  }

  /** The base URI, {@code http://host:port}. */
  public URI uri() {
    InetSocketAddress a = address();
    return URI.create("http://" + a.getAddress().getHostAddress() + ":" + a.getPort());
  }

  /** Stops accepting, lets running requests finish for up to {@code graceSeconds}, then stops. */
  public void close(int graceSeconds) {
    server.stop(graceSeconds);
    executor.shutdownNow();
  }

  @Override
  public void close() {
    close(0);
  }

  /**
   * Configures an {@link HttpService}; each setter checks its argument at once. Not thread-safe.
   */
  public static final class Builder {
    private final String name;
    private InetSocketAddress address = new InetSocketAddress("127.0.0.1", 0);
    private int threads = 2;
    private int queue = 64;
    private int maxBodyBytes = 1 << 20;
    private int backlog = 128;
    private Supplier<String> metrics;
    private Supplier<Probe> health = () -> Probe.ok("ok");
    private Supplier<Probe> ready = () -> Probe.ok("ready");
    private Handler fallback = r -> Response.error(404, "no route " + r.path());

    private Builder(String name) {
      this.name = Check.notBlank(name, "name");
    }

    /** Where to listen; port 0 picks a free one. Default 127.0.0.1, any port. */
    public Builder address(InetSocketAddress address) {
      this.address = Check.notNull(address, "address");
      return this;
    }

    /** Request threads (named {@code <name>-http-N}). Default 2. */
    public Builder threads(int threads) {
      this.threads = Check.atLeast(threads, 1, "threads");
      return this;
    }

    /** Requests queued for the threads before the accepting thread runs them. Default 64. */
    public Builder queue(int queue) {
      this.queue = Check.atLeast(queue, 1, "queue");
      return this;
    }

    /** The largest request body accepted (413 beyond it). Default 1 MiB. */
    public Builder maxBodyBytes(int bytes) {
      this.maxBodyBytes = Check.atLeast(bytes, 0, "maxBodyBytes");
      return this;
    }

    /** {@code GET /metrics}: the Prometheus text. Default none (the route answers 404). */
    public Builder metrics(Supplier<String> metrics) {
      this.metrics = Check.notNull(metrics, "metrics");
      return this;
    }

    /** {@code GET /healthz}: is the process alive. Default always ok. */
    public Builder health(Supplier<Probe> health) {
      this.health = Check.notNull(health, "health");
      return this;
    }

    /** {@code GET /readyz}: can it do its work now. Default always ready. */
    public Builder ready(Supplier<Probe> ready) {
      this.ready = Check.notNull(ready, "ready");
      return this;
    }

    /** Every other request. Default 404. */
    public Builder fallback(Handler fallback) {
      this.fallback = Check.notNull(fallback, "fallback");
      return this;
    }

    /**
     * Binds and starts serving.
     *
     * @throws IOException if the address cannot be bound
     */
    public HttpService start() throws IOException {
      ThreadPoolExecutor executor =
          Threads.bounded(
              name + "-http", threads, queue, new ThreadPoolExecutor.CallerRunsPolicy());
      HttpServer server;
      try {
        server = HttpServer.create(address, backlog);
      } catch (IOException e) {
        executor.shutdownNow();
        throw new IOException(
            "cannot serve HTTP on " + address + " (" + e.getMessage() + "); choose another port",
            e);
      }
      server.setExecutor(executor);
      Routes routes = new Routes(name, metrics, health, ready, fallback, maxBodyBytes);
      server.createContext("/", routes::serve);
      server.start();
      return new HttpService(server, executor);
    }
  }

  /** The built-in routes, then the fallback. */
  private record Routes(
      String name,
      Supplier<String> metrics,
      Supplier<Probe> health,
      Supplier<Probe> ready,
      Handler fallback,
      int maxBodyBytes) {

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
        Response builtIn = builtIn(method, path);
        if (builtIn != null) {
          return builtIn;
        }
        byte[] body = body(exchange);
        if (body == null) {
          return Response.error(
              413, "the body is larger than " + maxBodyBytes + " bytes, the limit of this server");
        }
        String auth = exchange.getRequestHeaders().getFirst("Authorization");
        return fallback.handle(new Request(method, exchange.getRequestURI(), auth, body));
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
        return Response.text(200, PROMETHEUS, metrics.get());
      }
      Probe p = probe.get();
      String text = p.text().endsWith("\n") ? p.text() : p.text() + "\n";
      return Response.text(p.ok() ? 200 : 503, "text/plain; charset=utf-8", text);
    }

    /** The body, or null when it is over the limit. */
    private byte[] body(HttpExchange exchange) throws IOException {
      try (InputStream in = exchange.getRequestBody()) {
        byte[] body = in.readNBytes(maxBodyBytes + 1);
        return body.length > maxBodyBytes ? null : body;
      }
    }

    private static void send(HttpExchange exchange, Response response) throws IOException {
      byte[] bytes = response.body();
      exchange.getResponseHeaders().set("Content-Type", response.contentType());
      boolean head = exchange.getRequestMethod().equals("HEAD");
      exchange.sendResponseHeaders(
          response.status(), bytes.length == 0 || head ? -1 : bytes.length);
      if (bytes.length > 0 && !head) {
        try (OutputStream out = exchange.getResponseBody()) {
          out.write(bytes);
        }
      }
    }
  }
}
