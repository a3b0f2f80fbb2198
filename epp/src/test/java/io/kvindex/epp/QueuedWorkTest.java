package io.kvindex.epp;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.redis.RedisConnector;
import io.kvindex.router.KvRouter;
import io.kvindex.router.ModelKeys;
import io.kvindex.testing.Fresh;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The work queued on each endpoint, as the picker gives it to the time-aware pick policy (the
 * default): the prompt tokens of its own requests there that have had no first token yet, and the
 * requests the engine reports waiting beyond those, at the configured tokens each. Under the
 * default cost model (5 ms a step, 40 µs a token) a prompt of 1 024 tokens cached on one endpoint
 * only goes there unless more than about 1 000 prompt tokens are queued ahead of it.
 */
@UsesRedis
class QueuedWorkTest {
  private static final String MODEL = ExtProcProtocolTest.MODEL;
  private static final Proxy.Mode FULL_DUPLEX = Proxy.Mode.of(BodySendMode.FULL_DUPLEX_STREAMED);

  @Test
  void ownRequestWithoutFirstToken_countsItsPromptTokens_untilItsFirstToken(
      @Fresh RedisStandalone redis) throws Exception {
    String uri = redis.uri().toURI().toString();
    Endpoint warm = Endpoint.of("pod-a", "127.0.0.11", 8000);
    Endpoint cold = Endpoint.of("pod-b", "127.0.0.12", 8000);
    byte[] prompt = ExtProcProtocolTest.completion(1024, 3);
    try (KvRouter router = router(uri)) {
      holds(uri, router, warm.pod(), prompt);
      holds(uri, router, cold.pod(), ExtProcProtocolTest.completion(16, 99));
      try (EppServer server = server(router, List.of(warm, cold), Duration.ZERO, null);
          Proxy proxy = new Proxy(server.address(), null);
          ProxyStream long1 = proxy.open()) {
        assertThat(proxy.pick(prompt, null))
            .as("nothing queued: the prompt goes where it is cached")
            .isEqualTo(warm.address());

        // A prompt of 8 192 uncached tokens goes to the warm endpoint; its answer has not begun.
        byte[] big = ExtProcProtocolTest.completion(8192, 5);
        assertThat(proxy.pick(long1, big, warm.address())).isEqualTo(warm.address());
        assertThat(proxy.pick(prompt, null))
            .as("8 192 prompt tokens queued ahead outweigh the 1 024 cached")
            .isEqualTo(cold.address());

        // The response's headers open an event stream: no token yet.
        long1.send(
            Proxy.responseHeaders(
                new Proxy.HttpResponse(200, "text/event-stream", new byte[0]), warm.address()));
        assertThat(long1.next().hasResponseHeaders()).isTrue();
        assertThat(proxy.pick(prompt, null)).isEqualTo(cold.address());

        // Its first event: the first token; the prompt is computed.
        long1.send(
            Proxy.responseBody(
                "data: {\"choices\":[{\"text\":\"a\"}]}\n\n".getBytes(StandardCharsets.UTF_8),
                false));
        long1.next();
        assertThat(proxy.pick(prompt, null))
            .as("the first token came: nothing is queued there any more")
            .isEqualTo(warm.address());
      }
    }
  }

  @Test
  void enginesWaitingRequests_countAtTheConfiguredTokensEach_beyondThePickersOwn(
      @Fresh RedisStandalone redis) throws Exception {
    String uri = redis.uri().toURI().toString();
    try (Engine x = Engine.start("pod-x");
        Engine y = Engine.start("pod-y");
        KvRouter router = router(uri)) {
      byte[] prompt = ExtProcProtocolTest.completion(1024, 4);
      holds(uri, router, "pod-x", prompt);
      holds(uri, router, "pod-y", ExtProcProtocolTest.completion(16, 98));
      try (EppServer server =
              server(router, List.of(x.endpoint, y.endpoint), Duration.ofMillis(20), 1024.0);
          Proxy proxy = new Proxy(server.address(), null)) {
        assertThat(proxy.pick(prompt, null)).isEqualTo(x.endpoint.address());

        // Two requests of other senders wait on the warm engine: 2 048 tokens at 1 024 each
        // (as two units of load, the policy's own guess, they would weigh 512).
        x.waiting.set(2);
        assertThat(Await.until(() -> proxy.pick(prompt, null).equals(y.endpoint.address())))
            .as("the engine's waiting requests count at the configured prompt tokens each")
            .isTrue();

        // Two requests of this picker's own, short and past their cache, are what waits there:
        // they count with their own prompt tokens, not again as the engine's.
        List<ProxyStream> own = new ArrayList<>();
        try {
          for (int i = 0; i < 2; i++) {
            ProxyStream s = proxy.open();
            own.add(s);
            byte[] small = ExtProcProtocolTest.completion(32, 200 + i);
            assertThat(proxy.pick(s, small, x.endpoint.address())).isEqualTo(x.endpoint.address());
          }
          // Once the engine is scraped with them waiting, they are the ones it counts.
          assertThat(Await.until(() -> proxy.pick(prompt, null).equals(x.endpoint.address())))
              .as("the waiting requests are the picker's own 64 tokens")
              .isTrue();
        } finally {
          own.forEach(ProxyStream::cancel);
        }
      }
    }
  }

  @Test
  void ownRequestBegunSinceTheLastScrape_isNotCountedAgainAsAnothers(@Fresh RedisStandalone redis)
      throws Exception {
    String uri = redis.uri().toURI().toString();
    try (Engine x = Engine.start("pod-x");
        Engine y = Engine.start("pod-y");
        KvRouter router = router(uri)) {
      byte[] prompt = ExtProcProtocolTest.completion(1024, 6);
      holds(uri, router, "pod-x", prompt);
      holds(uri, router, "pod-y", ExtProcProtocolTest.completion(16, 97));
      EppConfig.Builder config =
          ExtProcProtocolTest.config()
              .scrapeInterval(Duration.ofMillis(20))
              .scrapeStaleness(Duration.ofSeconds(60))
              .routeTtl(Duration.ZERO)
              .answeredRouteTtl(Duration.ZERO)
              .waitingRequestTokens(4096);
      try (EppServer server =
              EppServer.start(
                  config.build(),
                  router,
                  Candidates.of(List.of(x.endpoint, y.endpoint)),
                  new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
          Proxy proxy = new Proxy(server.address(), null);
          ProxyStream own = proxy.open()) {
        // The picker's own short request waits on the warm engine, and the engine says so.
        assertThat(proxy.pick(own, ExtProcProtocolTest.completion(32, 300), x.endpoint.address()))
            .isEqualTo(x.endpoint.address());
        x.waiting.set(1);
        int seen = x.scrapes.get();
        assertThat(Await.until(() -> x.scrapes.get() >= seen + 2)).isTrue();
        // No figures from now on: the last ones stay, fresh.
        x.freeze();
        assertThat(proxy.pick(prompt, null))
            .as("the request waiting there is the picker's own, of 32 tokens")
            .isEqualTo(x.endpoint.address());

        // Its answer comes: it has begun since the engine was last scraped.
        own.send(
            Proxy.responseHeaders(
                new Proxy.HttpResponse(200, "application/json", new byte[0]),
                x.endpoint.address()));
        assertThat(own.next().hasResponseHeaders()).isTrue();
        assertThat(proxy.pick(prompt, null))
            .as("the engine's last figures count the picker's own request, not another's")
            .isEqualTo(x.endpoint.address());
      }
    }
  }

  /** A picker without speculative routes: picks follow the index and the queued work alone. */
  private static EppServer server(
      KvRouter router, List<Endpoint> endpoints, Duration scrapeInterval, Double waitingTokens)
      throws IOException {
    EppConfig.Builder config =
        ExtProcProtocolTest.config()
            .scrapeInterval(scrapeInterval)
            .routeTtl(Duration.ZERO)
            .answeredRouteTtl(Duration.ZERO);
    if (waitingTokens != null) {
      config.waitingRequestTokens(waitingTokens);
    }
    return EppServer.start(
        config.build(),
        router,
        Candidates.of(endpoints),
        new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
  }

  private static KvRouter router(String uri) {
    try (RedisConnector connector = RedisConnector.connect(uri)) {
      PrefixIndex.builder().indexName("epp").redis(connector).build().close(); // an ingester's
    }
    return KvRouter.builder()
        .redisUri(uri)
        .indexName("epp")
        .model(MODEL, ModelKeys.engine("sha256_cbor", "0", 16))
        .lookupBudget(Duration.ofMillis(500))
        .meterRegistry(new PrometheusMeterRegistry(PrometheusConfig.DEFAULT))
        .build();
  }

  /** The pod's engine holds the completion's prompt, as its ingester writes it. */
  private static void holds(String uri, KvRouter router, String pod, byte[] completion)
      throws IOException {
    ObjectMapper json = new ObjectMapper();
    int[] tokens = json.convertValue(json.readTree(completion).path("prompt"), int[].class);
    List<Long> keys = new ArrayList<>();
    for (long k : router.blockKeys(MODEL, null, null, tokens)) {
      keys.add(k);
    }
    try (RedisConnector connector = RedisConnector.connect(uri);
        PrefixIndex index = PrefixIndex.builder().indexName("epp").redis(connector).build()) {
      StreamId stream = StreamId.of(MODEL, pod);
      Lease lease = index.acquireLease(stream, "test", Duration.ofMinutes(1)).orElseThrow();
      index.apply(
          stream,
          KeyMode.ENGINE,
          1,
          lease,
          KvEventBatch.of(0, List.of(BlockStored.of(keys, null, List.of(), 16)), 0));
    }
  }

  /**
   * An engine's {@code /metrics} as vLLM serves it, its waiting requests set by the test; once
   * frozen, it answers no scrape until closed.
   */
  private static final class Engine implements AutoCloseable {
    final AtomicInteger waiting = new AtomicInteger();
    final AtomicInteger scrapes = new AtomicInteger();
    final CountDownLatch thawed = new CountDownLatch(1);
    volatile boolean frozen;
    final HttpServer http;
    final Endpoint endpoint;

    private Engine(String pod, HttpServer http) {
      this.http = http;
      this.endpoint = Endpoint.of(pod, "127.0.0.1", http.getAddress().getPort());
    }

    static Engine start(String pod) throws IOException {
      HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
      Engine engine = new Engine(pod, http);
      http.createContext(
          "/metrics",
          exchange -> {
            if (engine.frozen) {
              try {
                engine.thawed.await(30, TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            }
            byte[] page =
                ("# TYPE vllm:num_requests_running gauge\n"
                        + "vllm:num_requests_running{model_name=\"m\",engine=\"0\"} 0.0\n"
                        + "# TYPE vllm:num_requests_waiting gauge\n"
                        + "vllm:num_requests_waiting{model_name=\"m\",engine=\"0\"} "
                        + engine.waiting.get()
                        + ".0\n")
                    .getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, page.length);
            try (OutputStream out = exchange.getResponseBody()) {
              out.write(page);
            }
            engine.scrapes.incrementAndGet();
          });
      http.start();
      return engine;
    }

    void freeze() {
      frozen = true;
    }

    @Override
    public void close() {
      thawed.countDown();
      http.stop(0);
    }
  }
}
