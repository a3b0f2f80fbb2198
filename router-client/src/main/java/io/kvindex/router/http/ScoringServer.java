package io.kvindex.router.http;

import io.kvindex.common.Check;
import io.kvindex.router.KvRouter;
import io.kvindex.service.HttpService;
import io.kvindex.service.HttpService.Probe;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.InetSocketAddress;

/**
 * The HTTP scoring service for gateways not on the JVM: {@code POST /score}, {@code POST /query}
 * (Dynamo and Mooncake indexer style), and the service endpoint's {@code GET /metrics}, {@code
 * /healthz} and {@code /readyz} (ready while Redis answers a ping within a second). Thread-safe.
 *
 * <p>Errors are {@code {"error": "..."}}: 400 for bad input, 404 for an unknown route, 405 for a
 * wrong method, 413 for a body over {@value #MAX_BODY_BYTES} bytes, 503 when the index is
 * unavailable, 500 for errors retrying cannot fix.
 */
public final class ScoringServer implements AutoCloseable {
  /** The largest body accepted: about a million token ids. */
  static final int MAX_BODY_BYTES = 8 << 20;

  private final HttpService http;

  private ScoringServer(HttpService http) {
    this.http = http;
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
    Check.atLeast(threads, 1, "threads");
    Routes routes = new Routes(router);
    return new ScoringServer(
        HttpService.builder("kvindex-router")
            .address(address)
            .threads(threads)
            .queue(1024 * threads)
            .maxBodyBytes(MAX_BODY_BYTES)
            .metrics(registry::scrape)
            .ready(
                () ->
                    router.indexReachable()
                        ? Probe.ok("ready")
                        : Probe.failing(
                            "not ready: Redis does not answer a ping within one second"))
            .fallback(routes::handle)
            .start());
  }

  /** The bound address (with the real port when 0 was asked for). */
  public InetSocketAddress address() {
    return http.address();
  }

  /** Stops accepting, lets running requests finish for up to a second, then stops. */
  @Override
  public void close() {
    http.close(1);
  }
}
