package io.kvindex.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.localredis.LocalRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class DemoTest {

  /** The whole stack on a small fleet: the demo's own checks must all pass. */
  @Test
  void run_smallFleet_indexExactAndRoutingBeatsRoundRobin() throws Exception {
    StringWriter progress = new StringWriter();
    DemoReport report =
        Demo.run(
            DemoConfig.builder().pods(4).duration(Duration.ofSeconds(12)).build(),
            new PrintWriter(progress, true));

    String summary = report.render();
    assertThat(report.problems()).as(summary).isEmpty();
    assertThat(report.podAccuracy()).as(summary).isEqualTo(1.0);
    assertThat(report.lookupAccuracy()).as(summary).isEqualTo(1.0);
    assertThat(report.hitRate("kvindex")).as(summary).isGreaterThan(report.hitRate("round-robin"));
    assertThat(report.exitCode()).isZero();
    assertThat(summary)
        .contains("pods whose indexed blocks equal their true blocks: 4/4 (100.0%)")
        .contains("reset pod-1's prefix cache")
        .contains("restarted pod-2's engine")
        .contains("killed ingester-2")
        .contains("  oracle ")
        .contains("kvindex / oracle = ")
        .contains("requests observed: ")
        .contains("lookups out of budget")
        .containsPattern("routed through kvindex in [0-9.]+ s: [0-9]+ requests/s, offered 150/s")
        .doesNotContain("NOT handled");
    assertThat(progress.toString()).contains("kvindex: routed");
  }

  /**
   * Through the endpoint picker: the proxy's part of ext_proc played over gRPC, the engines' usage
   * reaching kvindex only in the responses the picker sees; the run is as good as through /score.
   */
  @Test
  void run_viaEndpointPicker_routesAndClosesTheLoopFromTheResponses() throws Exception {
    StringWriter progress = new StringWriter();
    DemoReport report =
        Demo.run(
            DemoConfig.builder()
                .pods(4)
                .duration(Duration.ofSeconds(8))
                .via(DemoConfig.Via.EPP)
                .build(),
            new PrintWriter(progress, true));

    String summary = report.render();
    assertThat(report.problems()).as(summary).isEmpty();
    assertThat(report.podAccuracy()).as(summary).isEqualTo(1.0);
    assertThat(report.hitRate("kvindex")).as(summary).isGreaterThan(report.hitRate("round-robin"));
    assertThat(summary)
        .contains("endpoint picker round trip")
        .contains("endpoint picker calls failed: 0")
        .contains("read from its response by the endpoint picker")
        .containsPattern("longest_prefix=[1-9]")
        .containsPattern("[1-9][0-9]* requests observed: [1-9][0-9]* exact")
        .contains("responses not observed: 0");
    assertThat(progress.toString()).contains("endpoint pickers");
  }

  /**
   * Engines that evict without publishing: the summary gives both figures before and after the
   * fault, and what the closed loop did.
   */
  @Test
  void run_silentEviction_closedLoopResyncsAndBothFiguresReported() throws Exception {
    DemoReport report =
        Demo.run(
            DemoConfig.builder()
                .pods(4)
                .duration(Duration.ofSeconds(8))
                .fault(DemoConfig.Fault.SILENT_EVICTION)
                .closedLoop(true)
                .build(),
            new PrintWriter(new StringWriter(), true));

    String summary = report.render();
    assertThat(summary)
        .contains("silent eviction in every engine from request")
        .contains("kvindex / oracle")
        .contains("exact predictions")
        .containsPattern("before the fault +[0-9.]+% +[0-9.]+%")
        .containsPattern("after the fault +[0-9.]+% +[0-9.]+%")
        .containsPattern("drift purges by the ingesters: [0-9]+")
        .containsPattern("evictions inferred: [0-9]+ streams began on a resync");
  }

  /** A Redis with a password: neither the progress lines nor the summary show it. */
  @Test
  void run_passwordProtectedRedis_neverPrintsPassword() throws Exception {
    try (LocalRedis redis =
        LocalRedis.builder().setting("maxmemory-policy", "noeviction").start()) {
      RedisClient client = RedisClient.create(redis.uri().toString());
      try (StatefulRedisConnection<String, String> admin = client.connect()) {
        admin.sync().configSet("requirepass", "Pa55/w0rd");
      } finally {
        client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
      }
      StringWriter progress = new StringWriter();
      String uri = "redis://Pa55%2Fw0rd@" + redis.host() + ":" + redis.port();
      DemoReport report =
          Demo.run(
              DemoConfig.builder().redisUri(uri).pods(4).duration(Duration.ofSeconds(1)).build(),
              new PrintWriter(progress, true));

      assertThat(progress.toString())
          .contains("kvindex demo: Redis")
          .doesNotContain("Pa55", "w0rd");
      assertThat(report.render()).contains("Redis redis://***@").doesNotContain("Pa55", "w0rd");
    }
  }

  @Test
  void builder_badValues_sayWhatIsAccepted() {
    assertThatThrownBy(() -> DemoConfig.builder().pods(1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("pods must be within [2, 256]");
    assertThatThrownBy(() -> DemoConfig.builder().duration(Duration.ofMillis(10)))
        .hasMessageContaining("duration must be within [1s, 60m]");
    assertThatThrownBy(() -> DemoConfig.builder().trace(Path.of("no-such-trace.jsonl")))
        .hasMessageContaining("is not a readable file");
    assertThatThrownBy(() -> DemoConfig.builder().redisUri(" "))
        .hasMessageContaining("must not be blank");
  }
}
