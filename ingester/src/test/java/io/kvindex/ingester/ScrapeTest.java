package io.kvindex.ingester;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.ingester.stream.StreamStatus;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The reconciler's scrapes of pods' {@code /metrics}: one pod's slow or huge page must not hold up
 * what the others' pages say (sleep, restarts, reachability).
 */
@UsesRedis
class ScrapeTest {
  private static final Duration WAIT = Duration.ofSeconds(20);

  private Rig rig;
  private Fleet fleet;
  private HttpServer server;
  private ExecutorService serverThreads;
  private volatile boolean serving = true;
  private final AtomicInteger asked = new AtomicInteger();

  @BeforeEach
  void setUp(RedisStandalone redis) {
    rig = new Rig(redis);
  }

  @AfterEach
  void tearDown() {
    serving = false;
    rig.close();
    if (server != null) {
      server.stop(0);
      serverThreads.shutdownNow();
    }
    if (fleet != null) {
      fleet.close();
    }
  }

  /** A /metrics server whose page is written by {@code page}, one exchange per thread. */
  private String serve(PageWriter page) throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    serverThreads = Executors.newFixedThreadPool(4);
    server.setExecutor(serverThreads);
    server.createContext(
        "/metrics",
        exchange -> {
          asked.incrementAndGet();
          try (exchange) {
            exchange.sendResponseHeaders(200, 0); // chunked: no length announced
            page.write(exchange, exchange.getResponseBody());
          } catch (IOException e) {
            // the scraper gave up on the page: what the test wants
          }
        });
    server.start();
    return "http://127.0.0.1:" + server.getAddress().getPort() + "/metrics";
  }

  private interface PageWriter {
    void write(HttpExchange exchange, OutputStream out) throws IOException;
  }

  /**
   * Pod-0 has a normal page, pod-1's names a server that sends the page's headers and then one line
   * every 100 ms for ever. Pod-0 sleeps once pod-1's page has been asked for: its purge must come,
   * though the slow page never ends.
   */
  @Test
  void slowPage_delaysNoOtherPodsSleep() throws IOException {
    String slow =
        serve(
            (exchange, out) -> {
              while (serving) {
                out.write("# a slow page\n".getBytes(StandardCharsets.US_ASCII));
                out.flush();
                LockSupport.parkNanos(Duration.ofMillis(100).toNanos());
              }
            });
    sleepIsSeenBesides(slow);
  }

  /**
   * Pod-1's page is 32 MiB, past the 1 MiB page limit: it is refused (counted as {@code too_large})
   * without being read whole, and pod-0's sleep is still seen.
   */
  @Test
  void hugePage_isRefusedPastTheLimit() throws IOException {
    byte[] line =
        "# a huge page, 64 bytes a line ...............................\n"
            .getBytes(StandardCharsets.US_ASCII);
    String huge =
        serve(
            (exchange, out) -> {
              for (int i = 0; i < (32 << 20) / line.length && serving; i++) {
                out.write(line);
              }
            });
    Ingester ingester = sleepIsSeenBesides(huge);
    Await.until(
        WAIT,
        "the huge page counted as too large",
        () -> ingester.metrics().value("kvindex.ingester.scrapes", "outcome", "too_large") > 0);
    assertThat(ingester.metrics().value("kvindex.ingester.scrapes", "outcome", "ok"))
        .as("pod-0's pages")
        .isPositive();
  }

  /** Pod-1's /metrics is {@code url}; pod-0 sleeps once that has been asked: it must be purged. */
  private Ingester sleepIsSeenBesides(String url) {
    fleet = Fleet.start(2);
    List<PodSpec> specs =
        List.of(
            Fleet.spec(fleet.pod(0), "engine"),
            Fleet.spec(fleet.pod(1), "engine").withMetricsUrl(url));
    Ingester ingester = rig.start("r1", specs, b -> b.maxScrapeBytes(1 << 20));
    Await.until(
        WAIT,
        "both streams owned",
        () ->
            ingester.workers().values().stream()
                    .filter(w -> w.status().state() == StreamStatus.State.RUNNING)
                    .count()
                == 2);
    fleet.pods().forEach(p -> rig.warmUp(fleet, p));
    fleet.traffic(fleet.pod(0), 10);
    rig.awaitCaughtUp(fleet.pod(0), WAIT);
    Set<Long> held = new HashSet<>(fleet.pod(0).cachedBlocks(0, "GPU"));
    Await.until(WAIT, "pod-1's page asked for", () -> asked.get() > 0);

    fleet.pod(0).sleep(1); // no event until the next step: only /metrics tells

    Await.until(WAIT, "the sleeping pod purged", () -> rig.held("pod-0", held).isEmpty());
    assertThat(ingester.metrics().value("kvindex.ingester.purges", "reason", "sleep"))
        .isEqualTo(1.0);
    return ingester;
  }
}
