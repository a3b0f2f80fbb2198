package io.kvindex.examples.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.redis.RedisConnector;
import io.kvindex.router.KvRouter;
import io.kvindex.router.ModelKeys;
import io.kvindex.router.Pick;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

@UsesRedis
class GatewayTest {
  private static final String MODEL = "org/gateway";

  @Test
  void route_sendsThePromptWhereItsPrefixIsThenSpreadsByLoad(RedisStandalone redis) {
    String uri = "redis://" + redis.uri().getHost() + ":" + redis.uri().getPort();
    int[] prompt = IntStream.range(0, 16 * 4).map(i -> 500 + i).toArray();
    try (RedisConnector connector = RedisConnector.connect(uri)) {
      PrefixIndex.builder().indexName("gateway").redis(connector).build().close(); // an ingester's
    }
    store(uri, "pod-b", keysOf(uri, prompt));
    try (Gateway gateway =
        new Gateway(
            KvRouter.builder()
                .redisUri(uri)
                .indexName("gateway")
                .model(MODEL, ModelKeys.engine("sha256_cbor", "42", 16))
                .lookupBudget(Duration.ofSeconds(1))
                .build(),
            MODEL,
            List.of("pod-a", "pod-b"))) {

      Pick first = gateway.route(prompt);
      assertThat(first.pod()).isEqualTo("pod-b");
      assertThat(first.matchedBlocks()).isEqualTo(4);
      gateway.finished("pod-b");

      int[] other = IntStream.range(0, 16 * 4).map(i -> 9_000 + i).toArray();
      String a = gateway.route(other).pod();
      String b = gateway.route(IntStream.range(0, 64).map(i -> 20_000 + i).toArray()).pod();
      assertThat(List.of(a, b))
          .as("no prefix anywhere: by load")
          .containsExactlyInAnyOrder("pod-a", "pod-b");
    }
  }

  /**
   * What the router library brings a gateway holds neither the ingester nor the simulator, nor the
   * router server, the process shell, picocli, YAML, Micrometer's Prometheus registry or jeromq
   * (and the gateway above routes without them).
   */
  @Test
  void classPath_holdsOnlyWhatRouterClientPullsIn() {
    for (String absent :
        List.of(
            "io.kvindex.ingester.Ingester",
            "io.kvindex.simulator.SimulatedPod",
            "io.kvindex.router.http.ScoringServer",
            "io.kvindex.service.Setting",
            "picocli.CommandLine",
            "com.fasterxml.jackson.dataformat.yaml.YAMLFactory",
            "io.micrometer.prometheusmetrics.PrometheusMeterRegistry",
            "org.zeromq.ZMQ")) {
      assertThatThrownBy(() -> Class.forName(absent))
          .as(absent)
          .isInstanceOf(ClassNotFoundException.class);
    }
  }

  private static long[] keysOf(String uri, int[] prompt) {
    try (KvRouter router =
        KvRouter.builder()
            .redisUri(uri)
            .indexName("gateway")
            .model(MODEL, ModelKeys.engine("sha256_cbor", "42", 16))
            .build()) {
      return router.blockKeys(MODEL, null, null, prompt);
    }
  }

  private static void store(String uri, String pod, long[] keys) {
    try (RedisConnector connector = RedisConnector.connect(uri);
        PrefixIndex index = PrefixIndex.builder().indexName("gateway").redis(connector).build()) {
      StreamId stream = StreamId.of(MODEL, pod);
      Lease lease = index.acquireLease(stream, "test", Duration.ofMinutes(1)).orElseThrow();
      List<Long> hashes = IntStream.range(0, keys.length).mapToObj(i -> keys[i]).toList();
      index.apply(
          stream,
          KeyMode.ENGINE,
          1,
          lease,
          KvEventBatch.of(0, List.of(BlockStored.of(hashes, null, List.of(), 16)), 0));
    }
  }
}
