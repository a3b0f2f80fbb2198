package io.kvindex.router;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.KeyMode;
import io.kvindex.testing.RedisCluster;
import io.kvindex.testing.UsesRedisCluster;
import io.lettuce.core.RedisURI;
import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

@UsesRedisCluster
class KvRouterClusterTest {
  private static final String MODEL = "m";

  @Test
  void score_twoRoutersAgreeAndSeeAPurgeAtOnceOnACluster(RedisCluster cluster) {
    List<String> seeds =
        cluster.uris().stream()
            .map(RedisURI::toURI)
            .map(Object::toString)
            .collect(Collectors.toList());
    String writerUri = String.join(",", seeds);
    try (IndexFixture writer = new IndexFixture(writerUri, "c", MODEL, KeyMode.TOKEN, 4);
        KvRouter first = router(seeds.subList(0, 1));
        KvRouter second = router(seeds)) {
      int[] tokens = KvRouterTest.prompt(16 * 5, 9);
      List<String> pods = List.of("p0", "p1", "p2", "p3", "p4", "p5");
      for (int i = 0; i < pods.size(); i++) {
        writer.storeTokens(MODEL, pods.get(i), "adapter", tokens, i % 5, 16);
      }

      Scores a = first.score(ScoreRequest.ofTokens(MODEL, tokens, pods).withLora("adapter"));
      Scores b = second.score(ScoreRequest.ofTokens(MODEL, tokens, pods).withLora("adapter"));

      assertThat(a).isEqualTo(b);
      for (int i = 0; i < pods.size(); i++) {
        assertThat(a.pod(pods.get(i)).orElseThrow().depth()).isEqualTo(i % 5);
      }
      writer.purge(MODEL, "p4");
      assertThat(first.score(MODEL, "adapter", tokens, pods).pod("p4").orElseThrow().depth())
          .isZero();
      assertThat(second.score(MODEL, "adapter", tokens, pods).pod("p4").orElseThrow().depth())
          .isZero();
    }
  }

  private static KvRouter router(List<String> seeds) {
    return KvRouter.builder()
        .clusterSeeds(seeds)
        .indexName("c")
        .groups(4)
        .model(MODEL, ModelKeys.token(16))
        .lookupBudget(Duration.ofSeconds(1))
        .build();
  }
}
