package io.kvindex.router.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.PrefixIndex;
import io.kvindex.redis.RedisConnector;
import io.kvindex.router.KvRouter;
import io.kvindex.router.ModelKeys;
import io.kvindex.testing.Fresh;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * What an HTTP client can make a router keep in Redis by naming pods that do not exist: nothing.
 */
@UsesRedis
class ScoringServerMemoryTest {
  private static final String MODEL = "m";
  private static final HttpClient HTTP = HttpClient.newHttpClient();

  /**
   * {@code /score} calls naming made-up pods, each asking for its pick to be recorded as a route:
   * no key appears in Redis, and its memory stays where it was.
   */
  @Test
  void score_madeUpPodsWithRoutes_keepsNothingInRedis(@Fresh RedisStandalone redis)
      throws Exception {
    try (RedisConnector connector = RedisConnector.connect(redis.uri().toURI().toString());
        PrefixIndex ingester = PrefixIndex.builder().indexName("memory").redis(connector).build()) {
      // An ingester's: it creates the index, and its first write loads every script.
      assertThat(ingester.heartbeat(MODEL, "engine-0", Duration.ofMinutes(5))).isTrue();
    }
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    RedisClient client = RedisClient.create(redis.uri());
    try (KvRouter router =
            KvRouter.builder()
                .redisUri(redis.uri().toURI().toString())
                .indexName("memory")
                .model(MODEL, ModelKeys.engine("sha256_cbor", "0", 16))
                .lookupBudget(Duration.ofSeconds(1))
                .meterRegistry(registry)
                .build();
        ScoringServer server =
            ScoringServer.start(router, registry, new InetSocketAddress("127.0.0.1", 0), 2);
        StatefulRedisConnection<String, String> raw = client.connect()) {
      URI score = URI.create("http://127.0.0.1:" + server.address().getPort() + "/score");
      post(score, 0); // the router opens the index and notes its keys
      long keys = raw.sync().dbsize();
      long before = usedMemory(raw);
      for (int i = 1; i <= 200; i++) {
        HttpResponse<String> scored = post(score, i);
        assertThat(scored.statusCode()).as(scored.body()).isEqualTo(200);
      }
      assertThat(raw.sync().dbsize()).as("keys in Redis").isEqualTo(keys);
      assertThat(raw.sync().keys("*spec:*")).allMatch(k -> k.endsWith(":spec:models"));
      assertThat(usedMemory(raw) - before).isLessThan(1 << 20);
    } finally {
      client.shutdown();
    }
  }

  private static HttpResponse<String> post(URI score, int i) throws Exception {
    String body =
        "{\"model\":\""
            + MODEL
            + "\",\"token_ids\":["
            + i
            + ",1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17],\"pods\":[\"made-up-"
            + i
            + "-a\",\"made-up-"
            + i
            + "-b\"],\"load\":{},\"record_ttl_ms\":30000}";
    return HTTP.send(
        HttpRequest.newBuilder(score)
            .timeout(Duration.ofSeconds(10))
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static long usedMemory(StatefulRedisConnection<String, String> raw) {
    for (String line : raw.sync().info("memory").split("\\r?\\n")) {
      if (line.startsWith("used_memory:")) {
        return Long.parseLong(line.substring("used_memory:".length()).trim());
      }
    }
    throw new AssertionError("no used_memory in INFO memory");
  }
}
