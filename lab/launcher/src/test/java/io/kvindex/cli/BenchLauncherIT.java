package io.kvindex.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
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

  @Test
  void benchCompareQuick_ownRedis_everyIndexAnswersAlikeAndEveryRatioIsStated() throws Exception {
    Path out = dir.resolve("compare.json");

    Launcher.Result result =
        Launcher.run(dir, "bench", "compare", "--quick", "--out", out.toString());

    assertThat(result.exitCode()).as(result.err()).isZero();
    JsonNode json = new ObjectMapper().readTree(out.toFile());
    assertThat(json.path("quick").asBoolean()).isTrue();
    assertThat(json.path("setup").path("redis").path("version").asText()).isNotBlank();
    for (String index : List.of("kvindex", "llmd_layout", "in_process")) {
      JsonNode figures = json.path("figures").path(index);
      for (String figure :
          List.of(
              "lookup_p50_us_1t",
              "lookup_p99_us_1t",
              "lookups_per_s_1t",
              "lookup_p50_us_8t",
              "lookups_per_s_8t",
              "memory_bytes_per_entry",
              "apply_blocks_per_s")) {
        assertThat(figures.path(figure).asDouble()).as(index + " " + figure).isPositive();
      }
      assertThat(figures.path("lookup_p99_us_1t").asDouble())
          .isGreaterThanOrEqualTo(figures.path("lookup_p50_us_1t").asDouble());
      JsonNode details = json.path("details").path(index);
      assertThat(details.path("prompts_verified").asInt()).as(index).isPositive();
      assertThat(details.path("depth_mismatches").asLong()).as(index + " mismatches").isZero();
      JsonNode clear = json.path("details").path("clears").path(index).path("10000");
      assertThat(clear.path("depths_after").asText())
          .as(index + ": the cleared pod is gone and its neighbour keeps its blocks")
          .isEqualTo("cleared pod 0, neighbour 256 of 256");
      assertThat(clear.path("observer").path("lookups").asLong()).as(index).isPositive();
    }
    assertThat(
            json.path("details")
                .path("clears")
                .path("kvindex")
                .path("10000")
                .path("observer")
                .path("saw_part")
                .asLong())
        .as("kvindex lookups that saw part of a purge")
        .isZero();
    assertThat(
            json.path("details")
                .path("kvindex")
                .path("apply_blocks_per_s_one_call_per_batch")
                .asDouble())
        .as("kvindex applying one call per batch, beside the coalesced figure")
        .isPositive();
    JsonNode ratios = json.path("ratios_kvindex_to_llmd_layout");
    for (String figure :
        List.of(
            "lookup_p50_us_1t",
            "lookup_p99_us_8t",
            "lookups_per_s_8t",
            "redis_cpu_us_per_lookup",
            "memory_bytes_per_entry",
            "apply_blocks_per_s",
            "clear_max_command_us_10000",
            "clear_atomic_10000")) {
      assertThat(ratios.path(figure).path("kvindex_ahead").isBoolean()).as(figure).isTrue();
    }
    assertThat(ratios.path("clear_atomic_10000").path("kvindex").asBoolean()).isTrue();
    assertThat(ratios.path("redis_cpu_us_per_lookup").path("ratio").asDouble()).isPositive();
  }

  @Test
  void benchScaleQuick_ownRedis_writesEverySweepItsFitsAndItsCharts() throws Exception {
    Path out = dir.resolve("scale");

    Launcher.Result result =
        Launcher.run(dir, "bench", "scale", "--quick", "--out", out.toString());

    assertThat(result.exitCode()).as(result.err()).isZero();
    JsonNode json = new ObjectMapper().readTree(out.resolve("scale.json").toFile());
    assertThat(json.path("quick").asBoolean()).isTrue();
    assertThat(json.path("setup").path("redis_version").asText()).isNotBlank();
    for (JsonNode point : json.path("prompt_length").path("points")) {
      assertThat(point.path("kvindex_first_prompt_correct").asBoolean())
          .as(point.toString())
          .isTrue();
      assertThat(point.path("llmd_layout_first_prompt_correct").asBoolean()).isTrue();
      assertThat(point.path("hashing_us").asDouble()).isPositive();
    }
    assertThat(json.path("prompt_length").path("points")).hasSize(3);
    assertThat(json.path("candidates").path("points")).hasSize(3);
    assertThat(json.path("index_size").path("points")).hasSize(2);
    assertThat(json.path("cluster").path("points")).hasSize(2);
    assertThat(json.path("cluster").path("note").asText()).contains("contention");
    assertThat(json.path("ingest").path("points").size()).isPositive();
    for (String sweep : List.of("prompt_length", "candidates", "index_size", "cluster", "ingest")) {
      if (json.path(sweep).path("points").size() < 2) {
        continue;
      }
      JsonNode fits = json.path(sweep).path("fits");
      assertThat(fits.size()).as(sweep + " fits").isPositive();
      for (JsonNode fit : fits) {
        assertThat(fit.path("shape").asText()).isIn("flat", "logarithmic", "linear");
        assertThat(fit.path("line").asText()).isNotBlank();
      }
      Path png = out.resolve(json.path(sweep).path("chart").asText());
      byte[] head = Arrays.copyOf(Files.readAllBytes(png), 4);
      assertThat(head).as(png.toString()).isEqualTo(new byte[] {(byte) 0x89, 'P', 'N', 'G'});
    }
    for (JsonNode point : json.path("index_size").path("points")) {
      assertThat(point.path("memory_bytes_per_entry").asDouble()).isPositive();
      assertThat(point.path("gc_fields_scanned").asLong()).isPositive();
    }
    assertThat(
            json.path("capacity_check")
                .path("redis_used_memory_bytes")
                .path("predicted")
                .asDouble())
        .isPositive();
  }
}
