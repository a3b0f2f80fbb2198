package io.kvindex.epp;

import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.PodMatch;
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
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * The pick's speculative route: once the picker has answered with a pick, the index credits the
 * picked pod with the prompt (flagged speculative) before its engine reports a block, so that the
 * next request of the same prefix goes there too.
 */
@UsesRedis
class SpeculativeRouteTest {
  private static final String MODEL = ExtProcProtocolTest.MODEL;
  private static final List<Endpoint> ENDPOINTS =
      List.of(Endpoint.of("pod-a", "127.0.0.11", 8000), Endpoint.of("pod-b", "127.0.0.12", 8000));

  @Test
  void pick_isRecordedAsASpeculativeRouteOfThePickedPod(@Fresh RedisStandalone redis)
      throws Exception {
    String uri = redis.uri().toURI().toString();
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try (RedisConnector connector = RedisConnector.connect(uri);
        PrefixIndex index = PrefixIndex.builder().indexName("epp").redis(connector).build()) {
      // Both pods live in the index, as their ingester makes them (a route needs a live pod).
      for (Endpoint e : ENDPOINTS) {
        StreamId stream = StreamId.of(MODEL, e.pod());
        Lease lease = index.acquireLease(stream, "test", Duration.ofMinutes(1)).orElseThrow();
        index.apply(
            stream,
            KeyMode.ENGINE,
            1,
            lease,
            KvEventBatch.of(0, List.of(BlockStored.of(List.of(7L), null, List.of(), 16)), 0));
      }
      try (KvRouter router =
              KvRouter.builder()
                  .redisUri(uri)
                  .indexName("epp")
                  .model(MODEL, ModelKeys.engine("sha256_cbor", "0", 16))
                  .lookupBudget(Duration.ofMillis(500))
                  .meterRegistry(registry)
                  .build();
          EppServer server =
              EppServer.start(
                  ExtProcProtocolTest.config().routeTtl(Duration.ofSeconds(30)).build(),
                  router,
                  Candidates.of(ENDPOINTS),
                  registry);
          Proxy proxy = new Proxy(server.address(), null)) {
        int[] tokens = IntStream.range(0, 512).map(i -> (i * 7919 + 31) % 50000).toArray();
        byte[] body =
            ("{\"model\":\""
                    + MODEL
                    + "\",\"prompt\":"
                    + java.util.Arrays.toString(tokens).replace(" ", "")
                    + ",\"max_tokens\":4}")
                .getBytes(java.nio.charset.StandardCharsets.UTF_8);
        String picked;
        try (ProxyStream s = proxy.open()) {
          Proxy.Routed routed =
              proxy.request(
                  s,
                  Proxy.Mode.of(BodySendMode.FULL_DUPLEX_STREAMED),
                  new Proxy.HttpRequest("/v1/completions", Map.of(), body, null),
                  1);
          assertThat(routed.immediateStatus()).isZero();
          String address = routed.endpoints().get(0);
          picked =
              ENDPOINTS.stream()
                  .filter(e -> e.address().equals(address))
                  .findFirst()
                  .orElseThrow()
                  .pod();
        }
        String other = picked.equals("pod-a") ? "pod-b" : "pod-a";
        List<String> pods = List.of("pod-a", "pod-b");

        assertThat(
                Await.until(
                    () -> {
                      PodMatch m =
                          router.score(MODEL, null, tokens, pods).pod(picked).orElseThrow();
                      return m.speculative() && m.depth() > 0;
                    }))
            .as("the picked pod holds the prompt speculatively once the pick is answered")
            .isTrue();
        assertThat(router.score(MODEL, null, tokens, pods).pod(other).orElseThrow().depth())
            .as("the other pod holds nothing of it")
            .isZero();
      }
    }
  }
}
