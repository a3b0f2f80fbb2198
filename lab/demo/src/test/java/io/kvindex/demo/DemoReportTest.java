package io.kvindex.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DemoReportTest {

  /**
   * A cleanup that failed comes after the verdict, with its command, and the run's code stands (the
   * figures here lack the midway reset, so the verdict is a failure either way: what matters is
   * that the cleanup does not change it).
   */
  @Test
  void render_cleanupFailed_afterTheVerdictAndTheExitCodeStands() {
    String problem =
        "could not delete the demo's keys in Redis (127.0.0.1:7001: refused); delete them with:"
            + " redis-cli -h 127.0.0.1 -p 7001 --scan --pattern 'kvindex:v1:{demo-1/*'"
            + " | xargs -n 1 redis-cli -h 127.0.0.1 -p 7001 unlink";

    DemoReport report = metGoals().cleanup(Stack.Cleanup.failed(problem)).build();

    String summary = report.render();
    DemoReport without = metGoals().build();
    assertThat(report.exitCode()).as(summary).isEqualTo(without.exitCode());
    String verdict =
        without.render().lines().filter(l -> l.startsWith("Result: ")).findFirst().orElseThrow();
    assertThat(summary).contains(verdict).contains("Cleanup FAILED").contains(problem);
    assertThat(summary.indexOf("Cleanup FAILED")).isGreaterThan(summary.indexOf(verdict));
  }

  /** A cleanup that worked says how many keys it deleted, after the verdict. */
  @Test
  void render_cleanupDone_saysHowManyKeys() {
    String summary = metGoals().cleanup(Stack.Cleanup.deleted(42)).build().render();

    assertThat(summary).endsWith("Cleanup: the run's 42 keys deleted from Redis\n");
  }

  /** The figures of a short run on a given Redis that met every goal but the reset's. */
  private static DemoReport.Builder metGoals() {
    DemoConfig config =
        DemoConfig.builder()
            .redisUri("redis-cluster://127.0.0.1:7001")
            .pods(4)
            .duration(Duration.ofSeconds(10))
            .build();
    Map<String, Integer> fired = Map.of(Demo.RESET, 40, Demo.RESTART, 50, Demo.KILL, 60);
    return DemoReport.builder(config)
        .result(result(Policy.KVINDEX, 80, fired))
        .result(result(Policy.ORACLE, 82, Map.of()))
        .result(result(Policy.ROUND_ROBIN, 40, Map.of()))
        .result(result(Policy.RANDOM, 41, Map.of()))
        .indexReads(new Stack.IndexReads(100, 0, 0))
        .accuracy(
            new Auditor.Accuracy(4, Map.of(), 100, new Auditor.LookupAccuracy(10, 10, 0, null)))
        .ingest(
            new IngestStats(
                1000,
                5000,
                2,
                8,
                Map.of(Demo.SURVIVOR, 4),
                Map.of(),
                Map.of("all_blocks_cleared", 1L, "engine_restart", 1L),
                1,
                Map.of()))
        .takeover(Duration.ofSeconds(4))
        .elapsed(Duration.ofSeconds(20));
  }

  private static Run.Result result(String policy, long cachedPercent, Map<String, Integer> fired) {
    long[] prompts = new long[100];
    long[] cached = new long[100];
    java.util.Arrays.fill(prompts, 100);
    java.util.Arrays.fill(cached, cachedPercent);
    return new Run.Result(
        policy,
        100,
        100,
        100 * 100,
        100 * cachedPercent,
        0,
        Duration.ofSeconds(10),
        fired,
        prompts,
        cached);
  }
}
