package io.kvindex.chaos;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.kvindex.common.Threads;
import io.kvindex.service.HttpService;
import io.kvindex.simulator.SimulatedPod;
import io.kvindex.simulator.http.PodHttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One pod's {@code /metrics} page served on a loopback port of its own, which can be made to stall:
 * while stalled, a request gets its status line and headers at once, then the page one byte per
 * {@link #DRIP}, so that its body never ends while the stall lasts (a pod whose exporter hangs, or
 * a proxy in between that trickles). Otherwise it answers the pod's page as the pod's own endpoint
 * does. Thread-safe.
 */
final class StalledMetricsPage implements AutoCloseable {
  /** How often a stalled page sends its next byte. */
  static final Duration DRIP = Duration.ofMillis(500);

  private static final int THREADS = 8;

  private final SimulatedPod pod;
  private final HttpServer server;
  private final ExecutorService threads;
  private volatile boolean stalled;
  private final AtomicInteger holding = new AtomicInteger();
  private final AtomicLong stalledRequests = new AtomicLong();

  private StalledMetricsPage(SimulatedPod pod, HttpServer server, ExecutorService threads) {
    this.pod = pod;
    this.server = server;
    this.threads = threads;
  }

  /** Serves {@code pod}'s page on a free loopback port. */
  static StalledMetricsPage start(SimulatedPod pod) {
    ExecutorService threads =
        Threads.bounded(
            "chaos-metrics-" + pod.name(), THREADS, 64, new ThreadPoolExecutor.AbortPolicy());
    try {
      HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
      StalledMetricsPage page = new StalledMetricsPage(pod, server, threads);
      server.setExecutor(threads);
      server.createContext("/metrics", page::serve);
      server.start();
      return page;
    } catch (IOException e) {
      threads.shutdownNow();
      throw new UncheckedIOException(
          "cannot serve " + pod.name() + "'s /metrics on a free loopback port", e);
    }
  }

  /** The page's URL, for the ingesters' pod list. */
  String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort() + "/metrics";
  }

  /** Stalls every page from now on (true), or lets them finish (false). */
  void stall(boolean stalled) {
    this.stalled = stalled;
  }

  /** Whether a stalled page is being sent now (a scrape is held in it). */
  boolean holding() {
    return holding.get() > 0;
  }

  /** Requests answered with a stalled page so far. */
  long stalledRequests() {
    return stalledRequests.get();
  }

  private void serve(HttpExchange exchange) throws IOException {
    try {
      byte[] page = PodHttpServer.metrics(pod).getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().set("Content-Type", HttpService.PROMETHEUS);
      if (!stalled) {
        exchange.sendResponseHeaders(200, page.length);
        exchange.getResponseBody().write(page);
        return;
      }
      stalledRequests.incrementAndGet();
      holding.incrementAndGet();
      try {
        exchange.sendResponseHeaders(200, 0); // chunked: the length is not told
        OutputStream body = exchange.getResponseBody();
        int sent = 0;
        while (stalled && sent < page.length - 1) {
          body.write(page[sent++]);
          body.flush(); // fails once the client has given up and closed its connection
          TimeUnit.NANOSECONDS.sleep(DRIP.toNanos());
        }
        body.write(page, sent, page.length - sent);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } finally {
        holding.decrementAndGet();
      }
    } finally {
      exchange.close();
    }
  }

  @Override
  public void close() {
    stalled = false;
    server.stop(0);
    threads.shutdownNow();
  }
}
