package io.kvindex.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs {@code scripts/kvindex bench index --quick} for real (its own Redis, the full code path of
 * the full run at smaller sizes) and checks the JSON it writes: every figure the index goals are
 * stated in, and the benchmark's own checks of what it measured. Times nothing.
 */
class BenchLauncherIT {
  private static final List<String> SIZES = List.of("10000", "100000");

  @TempDir Path dir;

  @Test
  void benchIndexQuick_ownRedis_writesEveryGoalFigureAndItsChecksHold() throws Exception {
    Path out = dir.resolve("index.json");

    Launcher.Result result =
        Launcher.run(dir, "bench", "index", "--quick", "--out", out.toString());

    assertThat(result.exitCode()).as(result.err()).isZero();
    JsonNode json = new ObjectMapper().readTree(out.toFile());
    assertThat(json.path("quick").asBoolean()).isTrue();
    for (String figure :
        List.of(
            "ping_p50_us",
            "lookup_p50_us",
            "lookup_p99_us",
            "memory_bytes_per_entry",
            "apply_blocks_per_s",
            "sadd_pipelined_per_s")) {
      assertThat(json.path(figure).asDouble()).as(figure).isPositive();
    }
    assertThat(json.path("lookup_p99_us").asDouble())
        .isGreaterThanOrEqualTo(json.path("lookup_p50_us").asDouble());
    JsonNode lookup = json.path("lookup");
    assertThat(lookup.path("prompts_verified").asInt()).as("prompts verified").isPositive();
    assertThat(lookup.path("depth_mismatches").asInt()).as("depth mismatches").isZero();
    assertThat(lookup.path("measured_block_reads").isNumber()).isTrue();
    assertThat(lookup.path("measured_block_reads").asLong())
        .as("lookups that read block fields: every block the fixture stores has a known parent")
        .isZero();
    for (String size : SIZES) {
      for (String figure :
          List.of("purge_max_command_us", "purge_cleanup_ms", "naive_purge_max_command_us")) {
        assertThat(json.path(figure).path(size).asDouble()).as(figure + " " + size).isPositive();
      }
      JsonNode purge = json.path("purge").path(size);
      assertThat(purge.path("gc_entries_removed").asLong())
          .as("entries GC removed after purging a " + size + "-block pod")
          .isEqualTo(Long.parseLong(size));
      assertThat(purge.path("naive_removed").asLong()).isEqualTo(Long.parseLong(size));
      // The check is skipped, and says so, when five lookups in a row miss the router's 5 ms
      // budget (a busy machine); otherwise the purged pod must match nothing and its neighbour
      // everything.
      assertThat(purge.path("neighbour_depth_after").asText())
          .as("the purged pod is gone and its neighbour keeps its blocks")
          .matches("purged pod 0, neighbour (\\d+) of \\1|not checked: .*");
    }
  }
}
