package io.kvindex.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.localredis.LocalRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

/**
 * The demo end to end. Its runs, each on a stack and Redis of its own, go two at a time (see
 * junit-platform.properties in the test resources).
 */
class DemoTest {
  /**
   * How much faster than recorded the traces below are played: their requests stay far enough apart
   * for each one's events to be in the index before the next is routed.
   */
  private static final double TRACE_SPEED = 2.0;

  /** The whole stack on a small fleet: the demo's own checks must all pass. */
  @Test
  @Execution(ExecutionMode.CONCURRENT)
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
        .containsPattern("reset pod-[0-9]+'s prefix cache")
        .containsPattern("restarted pod-[0-9]+'s engine")
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
  @Execution(ExecutionMode.CONCURRENT)
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
  @Execution(ExecutionMode.CONCURRENT)
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

  /**
   * A trace whose 16 requests, 1.5 s apart (0.75 s at the speed it is played), all share one
   * prefix: the routers send every one of them to the pod that served the first (pod-3, by the
   * tie-break of that prefix; too few for the overload guard to move one), so the other pods hold
   * nothing when the faults fire. The reset must clear a pod that holds blocks, and its
   * AllBlocksCleared, published with that engine's next request, must purge the pod: a reset of a
   * pod that holds nothing and serves nothing after it publishes no clear, and is no failure of the
   * index.
   */
  @Test
  @Execution(ExecutionMode.CONCURRENT)
  void run_traceRoutedToOnePod_resetsThePodHoldingBlocksAndItsClearPurges(@TempDir Path dir)
      throws Exception {
    Path trace = dir.resolve("one-prefix.jsonl");
    List<String> records = new ArrayList<>();
    for (int r = 0; r < 16; r++) {
      records.add(record(r * 1_500L, 2560, 100, 101, 102, 103, 104 + r));
    }
    Files.write(trace, records);
    DemoReport report =
        Demo.run(
            DemoConfig.builder().pods(4).trace(trace).speed(TRACE_SPEED).build(),
            new PrintWriter(new StringWriter(), true));

    String summary = report.render();
    assertThat(report.problems()).as(summary).isEmpty();
    assertThat(summary)
        .containsPattern("reset pod-[0-9]+'s prefix cache \\(before request [0-9]+; it held [1-9]")
        .contains("handled: its AllBlocksCleared went out with the engine's next step")
        .doesNotContain("NOT handled");
  }

  /**
   * Requests of one prefix, then only of another: the pod that served the first prefix holds the
   * most blocks when the reset clears it, and no request reaches it after, so its engine never
   * publishes the AllBlocksCleared and the index lists what it held to the end of the run. That is
   * how vLLM behaves, not a failure: the demo sends the engine one request, whose step publishes
   * the clear, and the pod is purged.
   */
  @Test
  @Execution(ExecutionMode.CONCURRENT)
  void run_resetPodServesNothingAfter_clearPublishedByTheNextRequestAndPurged(@TempDir Path dir)
      throws Exception {
    Path trace = dir.resolve("two-prefixes.jsonl");
    List<String> records = new ArrayList<>();
    for (int r = 0; r < 6; r++) {
      records.add(record(r * 1_000L, 2560, 100, 101, 102, 103, 104 + r));
    }
    for (int r = 0; r < 10; r++) {
      records.add(record(10_000L + r * 1_250L, 2560, 200, 201, 202, 203, 204 + r));
    }
    Files.write(trace, records);
    DemoReport report =
        Demo.run(
            DemoConfig.builder().pods(4).trace(trace).speed(TRACE_SPEED).build(),
            new PrintWriter(new StringWriter(), true));

    String summary = report.render();
    assertThat(report.problems()).as(summary).isEmpty();
    assertThat(summary)
        .containsPattern(
            "no request reached pod-[0-9]+ after the reset, so its AllBlocksCleared stayed queued"
                + " in the engine .* and the index listed [1-9][0-9]* entries of it to the end of"
                + " the run; request [0-9]+ sent to it again after the run \\(the index predicted"
                + " [1-9][0-9]* blocks, the engine served 0 tokens from cache\\) published it, and"
                + " the pod was purged: handled");
  }

  private static String record(long timestamp, int inputLength, int... hashIds) {
    StringBuilder ids = new StringBuilder();
    for (int id : hashIds) {
      ids.append(ids.length() == 0 ? "" : ", ").append(id);
    }
    return String.format(
        "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": 8, \"hash_ids\": [%s]}",
        timestamp, inputLength, ids);
  }

  /**
   * A Redis with a password, and the smallest fleet: neither the progress lines nor the summary
   * show the password, and the reset and the restart each take one of the two pods.
   */
  @Test
  @Execution(ExecutionMode.CONCURRENT)
  void run_passwordProtectedRedisTwoPods_neverPrintsPasswordAndFaultsTakeOnePodEach()
      throws Exception {
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
              DemoConfig.builder().redisUri(uri).pods(2).duration(Duration.ofSeconds(8)).build(),
              new PrintWriter(progress, true));

      String summary = report.render();
      assertThat(progress.toString())
          .contains("kvindex demo: Redis")
          .doesNotContain("Pa55", "w0rd");
      assertThat(summary).contains("Redis redis://***@").doesNotContain("Pa55", "w0rd");
      assertThat(report.problems()).as(summary).isEmpty();
      assertThat(summary)
          .containsPattern("reset pod-[01]'s prefix cache")
          .containsPattern("restarted pod-[01]'s engine");
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
