package io.kvindex.service;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpServer;
import io.kvindex.common.Check;
import io.kvindex.common.Threads;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.function.Supplier;

/**
 * The HTTP endpoint of every kvindex process (ingester, router, simulated pod) on the JDK's HTTP
 * server: {@code GET /metrics} (Prometheus text), {@code GET /healthz} and {@code GET /readyz} (200
 * or 503 with a line of text saying why), and whatever else the process routes through its {@link
 * Handler}. Requests run on a named pool of a fixed size over a bounded queue; past the queue the
 * accepting thread runs the request itself, which slows accepting down instead of dropping work.
 * Thread-safe.
 *
 * <p>With a {@linkplain Builder#authToken token}, every request but {@code /healthz}, {@code
 * /readyz} and (unless {@linkplain Builder#authMetrics asked}) {@code /metrics} must carry {@code
 * Authorization: Bearer <token>}, or is answered 401 with a {@code WWW-Authenticate: Bearer}
 * challenge before its body is read.
 *
 * <p>Slow clients: the JDK server reads a request's line and headers on a request thread, so a
 * client that sends half a request holds that thread until the {@linkplain Builder#readTimeout read
 * timeout} closes its connection; kept-alive connections close after the {@linkplain
 * Builder#idleTimeout idle timeout}. Both are process-wide: the JDK server takes them from system
 * properties, read once per process, which the first {@code start()} sets.
 *
 * <p>Errors are {@code {"error": "..."}}: 401 without the token, 413 for a body over the limit, 400
 * for a handler's {@link IllegalArgumentException}, 404 for an unknown route, 405 for a wrong
 * method, 500 otherwise.
 */
public final class HttpService implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The content type of Prometheus's text format. */
  public static final String PROMETHEUS = "text/plain; version=0.0.4; charset=utf-8";

  /** The default of {@link Builder#readTimeout}. */
  public static final Duration DEFAULT_READ_TIMEOUT = Duration.ofSeconds(10);

  /** The default of {@link Builder#idleTimeout}. */
  public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(30);

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

  /** One answer; {@code headers} are set on top of the content type. */
  public record Response(int status, String contentType, byte[] body, Map<String, String> headers) {
    public Response {
      headers = Map.copyOf(headers);
    }

    public Response(int status, String contentType, byte[] body) {
      this(status, contentType, body, Map.of());
    }

    /** This answer with one more header. */
    public Response withHeader(String name, String value) {
      Map<String, String> more = new LinkedHashMap<>(headers);
      more.put(Check.notBlank(name, "header name"), Check.notNull(value, "header value"));
      return new Response(status, contentType, body, more);
    }

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

  /**
   * The shared secret in {@code file}, trimmed: for {@link Builder#authToken}, so that the token
   * never appears on a command line.
   *
   * @throws IllegalArgumentException if the file cannot be read or holds only white space
   */
  public static String readAuthToken(Path file) {
    return BearerAuth.read(file);
  }

  /**
   * A read or idle timeout as the JDK's HTTP server can take it: a whole number of seconds, at
   * least 1, for configs that check their values before a server starts.
   *
   * @throws IllegalArgumentException naming {@code name} otherwise
   */
  public static Duration checkTimeout(Duration timeout, String name) {
    Check.notNull(timeout, name);
    if (timeout.compareTo(Duration.ofSeconds(1)) < 0 || timeout.toNanos() % 1_000_000_000L != 0) {
      throw new IllegalArgumentException(
          name
              + " must be a whole number of seconds, at least 1s (the JDK's HTTP server counts in"
              + " seconds), got "
              + Durations.format(timeout));
    }
    return timeout;
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
    private String bodyLimit = "the limit of this server";
    private int backlog = 128;
    private String authToken;
    private boolean authMetrics;
    private Duration readTimeout = DEFAULT_READ_TIMEOUT;
    private Duration idleTimeout = DEFAULT_IDLE_TIMEOUT;
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

    /** The largest request body accepted, the 413 naming {@code setting} as the limit. */
    public Builder maxBodyBytes(int bytes, Setting setting) {
      maxBodyBytes(bytes);
      this.bodyLimit = "the limit set by " + Check.notNull(setting, "setting").describe();
      return this;
    }

    /**
     * The shared secret every request but the probes (and by default {@code /metrics}) must carry
     * as {@code Authorization: Bearer <token>}; compared in constant time. Default none: open.
     */
    public Builder authToken(String token) {
      this.authToken = Check.notBlank(token, "authToken");
      return this;
    }

    /** Whether {@code /metrics} needs the {@link #authToken} too. Default false. */
    public Builder authMetrics(boolean required) {
      this.authMetrics = required;
      return this;
    }

    /**
     * How long a client may take to send a whole request (from its first byte to its body's last)
     * or to take in its answer; past it the connection is closed. Whole seconds, at least 1.
     * Process-wide: every server of the process must ask the same. Default 10 s.
     */
    public Builder readTimeout(Duration timeout) {
      this.readTimeout = checkTimeout(timeout, "readTimeout");
      return this;
    }

    /**
     * How long a kept-alive connection may stay idle before it is closed (a new connection that
     * sends nothing: the shorter of this and the read timeout). Whole seconds, at least 1.
     * Process-wide. Default 30 s.
     */
    public Builder idleTimeout(Duration timeout) {
      this.idleTimeout = checkTimeout(timeout, "idleTimeout");
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
     * @throws IllegalStateException if an earlier server of this process runs with other timeouts
     */
    public HttpService start() throws IOException {
      ServerTimeouts.install(readTimeout, idleTimeout);
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
      Routes routes =
          new Routes(
              name,
              metrics,
              health,
              ready,
              fallback,
              maxBodyBytes,
              bodyLimit,
              BearerAuth.of(authToken, authMetrics));
      server.createContext("/", routes::serve);
      server.start();
      return new HttpService(server, executor);
    }
  }
}
