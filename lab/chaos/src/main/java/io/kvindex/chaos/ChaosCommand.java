package io.kvindex.chaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvindex chaos}: runs the whole stack through each fault scenario under load while an
 * auditor checks router answers against the pods' ground truth, and writes the figures and goals as
 * JSON. Exit 0 when every scenario ran (the goals are in the JSON and the summary, measured on this
 * machine), 1 when a scenario could not run. Not thread-safe: picocli fills it once.
 */
@Command(
    name = "chaos",
    mixinStandardHelpOptions = true,
    description = {
      "Runs simulated pods, 2 ingesters and 2 routers on a standalone Redis (and a 3+3 Redis"
          + " Cluster or a Sentinel set where the scenario needs one) through each fault under"
          + " load, checking sampled router answers against the pods' ground truth during and"
          + " after the fault; writes false positives and negatives, the longest false-positive"
          + " window, the time to accuracy again, batches lost, real errors and the accuracy at"
          + " quiescence per scenario."
    })
public final class ChaosCommand implements Callable<Integer> {
  private static final ObjectMapper JSON =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  @Spec CommandSpec spec;

  @Option(
      names = "--quick",
      description = "A representative subset with shorter phases (under 3 minutes)")
  boolean quick;

  @Option(
      names = "--scenario",
      paramLabel = "NAME",
      description =
          "Only these scenarios (repeatable); default every one but ring-rebuild-heap-capped (a"
              + " quarter of an hour; run it by name), or the --quick set")
  List<String> scenarios = new ArrayList<>();

  @Option(
      names = "--out",
      required = true,
      paramLabel = "FILE",
      description = "Where to write the JSON")
  Path out;

  @Option(
      names = "--phases",
      split = ",",
      paramLabel = "WARM,FAULT,AFTER",
      description =
          "Seconds of load before the fault, of a fault that lasts a set time, and of load after"
              + " it (each 1 to 600). Default: 4,4,5 with --quick, 8,8,12 otherwise. Shorter"
              + " phases check that every scenario runs and ends exact; the false-positive"
              + " windows they measure are then shorter than the goals assume")
  List<Integer> phases = new ArrayList<>();

  @Option(
      names = "--seed",
      defaultValue = "11",
      description = "Seed of the workload and the auditor's samples. Default: ${DEFAULT-VALUE}")
  long seed;

  @Override
  public Integer call() throws InterruptedException, IOException {
    List<ChaosScenario> chosen = new ArrayList<>();
    try {
      for (String name : scenarios) {
        chosen.add(ChaosScenario.named(name));
      }
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), e.getMessage(), e);
    }
    if (chosen.isEmpty()) {
      chosen.addAll(quick ? ChaosScenario.quickOnes() : ChaosScenario.everyRun());
    }
    ChaosRun.Timings timings = quick ? ChaosRun.Timings.QUICK : ChaosRun.Timings.FULL;
    if (!phases.isEmpty()) {
      if (phases.size() != 3 || phases.stream().anyMatch(s -> s < 1 || s > 600)) {
        throw new ParameterException(
            spec.commandLine(),
            "--phases takes three whole numbers of seconds from 1 to 600, WARM,FAULT,AFTER (for"
                + " example 2,2,3); got "
                + phases);
      }
      timings =
          timings.withPhases(
              Duration.ofSeconds(phases.get(0)),
              Duration.ofSeconds(phases.get(1)),
              Duration.ofSeconds(phases.get(2)));
    }
    PrintWriter stdout = spec.commandLine().getOut();
    ObjectNode report = JSON.createObjectNode();
    report.put(
        "command",
        "chaos"
            + (quick ? " --quick" : "")
            + (phases.isEmpty()
                ? ""
                : " --phases "
                    + phases.stream().map(String::valueOf).collect(Collectors.joining(","))));
    report.put("started", Instant.now().toString());
    report.put("cores", Runtime.getRuntime().availableProcessors());
    report.put(
        "load_average_at_start",
        Math.round(ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage() * 100)
            / 100.0);
    ObjectNode setup = report.putObject("setup");
    setup.put("pods", timings.pods());
    setup.put("requests_per_s", timings.rate());
    setup.put("warm_s", timings.warm().toSeconds());
    setup.put("fault_s", timings.fault().toSeconds());
    setup.put("after_s", timings.after().toSeconds());
    setup.put("grace_ms", ChaosRun.GRACE.toMillis());
    setup.put(
        "note",
        "a false positive: a router credits a pod with a block it stopped holding more than"
            + " grace_ms ago; a false negative: a block the pod has held longer than that is"
            + " missing");
    ArrayNode results = report.putArray("scenarios");
    boolean allMet = true;
    int failedToRun = 0;
    for (ChaosScenario scenario : chosen) {
      stdout.println("chaos: " + scenario.cliName() + ": " + scenario.description);
      stdout.flush();
      ObjectNode r;
      try {
        r =
            scenario == ChaosScenario.DEMO_CLUSTER_PRIMARY_LOST
                ? ChaosDemoRun.run(scenario, timings, seed, stdout)
                : ChaosRun.run(scenario, timings, seed);
      } catch (RuntimeException e) {
        failedToRun++;
        r = JSON.createObjectNode();
        r.put("scenario", scenario.cliName());
        r.put("failed_to_run", String.valueOf(e));
        results.add(r);
        LoggerFactory.getLogger(ChaosCommand.class)
            .error("chaos {}: the scenario could not run", scenario.cliName(), e);
        stdout.println("  could not run: " + e);
        continue;
      }
      boolean met = ChaosGoals.check(scenario, r);
      allMet &= met;
      results.add(r);
      stdout.println(summary(r));
      if (r.has("heap")) {
        stdout.println(heapSummary(r.path("heap")));
      }
      if (scenario == ChaosScenario.SLOW_METRICS) {
        stdout.println(stalledPageSummary(r.path("fault")));
      }
      if (scenario == ChaosScenario.TOUCH_FLOOD) {
        stdout.println(touchFloodSummary(r.path("fault")));
      }
      if (scenario == ChaosScenario.WORST_SCORE) {
        stdout.println(worstScoreSummary(r.path("fault")));
      }
      if (scenario == ChaosScenario.SLOT_MIGRATION) {
        stdout.println(migrationSummary(r.path("fault")));
      }
      stdout.flush();
    }
    report.put("all_goals_met", allMet && failedToRun == 0);
    report.put("finished", Instant.now().toString());
    Files.createDirectories(out.toAbsolutePath().getParent());
    JSON.writeValue(out.toFile(), report);
    stdout.println("wrote " + out + (allMet ? "" : " (some goals missed; see \"goals\")"));
    stdout.flush();
    return failedToRun == 0 ? 0 : 1;
  }

  private static String stalledPageSummary(JsonNode fault) {
    return String.format(
        "  %s's /metrics stalled: %d scrapes timed out; %s's sleep purged after %d ms, %s's"
            + " restart after %d ms (bound %d ms: a scrape timeout, a reconcile interval and a"
            + " second)",
        fault.path("stalled_pod").asText(),
        fault.path("scrapes_timed_out").asLong(),
        fault.path("sleeping_pod").asText(),
        fault.path("sleep_purged_after_ms").asLong(),
        fault.path("restarted_pod").asText(),
        fault.path("restart_purged_after_ms").asLong(),
        fault.path("bound_ms").asLong());
  }

  private static String touchFloodSummary(JsonNode fault) {
    long most = 0;
    for (JsonNode b : fault.path("touch_stream_bytes_max")) {
      most = Math.max(most, b.asLong());
    }
    return String.format(
        "  %d /observe calls; the largest touch stream held %.2f MiB (cap %.0f MiB); every stream"
            + " empty %d ms after the flood; Redis memory grew at most %.1f MiB, %.1f MiB once"
            + " read",
        fault.path("observe_calls").asLong(),
        most / (1024.0 * 1024),
        mib(fault.path("touch_stream_byte_cap")),
        fault.path("touch_streams_empty_after_ms").asLong(),
        mib(fault.path("redis_used_memory_peak_growth_bytes")),
        mib(fault.path("redis_used_memory_growth_after_drain_bytes")));
  }

  private static String worstScoreSummary(JsonNode fault) {
    JsonNode worst = fault.path("worst_requests");
    return String.format(
        "  %d worst /score calls (%d block keys, %d candidates, a route asked first for %d); SLOWLOG"
            + " over %d µs under the loop: %d router commands (longest %d µs), %d others (longest"
            + " %d µs); alone, median/longest µs: blocks HMGET %d/%d, routes HMGET %d/%d, route"
            + " script %d/%d; Redis memory over %d calls naming made-up pods: %+d bytes",
        worst.path("calls").asLong(),
        worst.path("block_keys").asLong(),
        worst.path("candidates").asLong(),
        worst.path("route_calls_answered_with_a_pick").asLong(),
        fault.path("slowlog_threshold_micros").asLong(),
        fault.path("slowlog_router_path_entries").asLong(),
        fault.path("slowlog_router_path_longest_micros").asLong(),
        fault.path("slowlog_other_entries").asLong(),
        fault.path("slowlog_other_longest_micros").asLong(),
        fault.at("/worst_request_alone/blocks_hmget/median_micros").asLong(),
        fault.at("/worst_request_alone/blocks_hmget/longest_micros").asLong(),
        fault.at("/worst_request_alone/routes_hmget/median_micros").asLong(),
        fault.at("/worst_request_alone/routes_hmget/longest_micros").asLong(),
        fault.at("/worst_request_alone/speculate_script/median_micros").asLong(),
        fault.at("/worst_request_alone/speculate_script/longest_micros").asLong(),
        fault.path("made_up_pod_calls").asLong(),
        fault.path("redis_used_memory_growth_over_made_up_rounds_bytes").asLong());
  }

  private static String migrationSummary(JsonNode fault) {
    return String.format(
        "  slot %d moved from %s to %s: %d keys in %d MIGRATE calls (longest %d ms), %d ms from"
            + " IMPORTING to NODE; index resets %d, purges as lost %d until quiescence",
        fault.path("slot").asInt(),
        fault.path("from").asText(),
        fault.path("to").asText(),
        fault.path("keys_moved").asLong(),
        fault.path("migrate_calls").asLong(),
        fault.path("longest_migrate_ms").asLong(),
        fault.path("importing_to_node_ms").asLong(),
        fault.path("index_resets_until_quiescence").asLong(),
        fault.path("index_reset_purges_until_quiescence").asLong());
  }

  private static String heapSummary(JsonNode heap) {
    return String.format(
        "  ingester heap: at most %.0f MiB in use (garbage included) of its %.0f MiB cap, at most"
            + " %.0f MiB left after a collection; the memory budget counted at most %.0f of its"
            + " %.0f MiB; %s",
        mib(heap.path("heap_used_max_bytes")),
        mib(heap.path("heap_max_bytes")),
        mib(heap.path("heap_after_gc_max_bytes")),
        mib(heap.path("memory_budget_peak_bytes")),
        mib(heap.path("memory_budget_bytes")),
        heap.path("out_of_memory").asBoolean()
            ? "it ran OUT OF MEMORY"
            : heap.path("ingester_alive_at_end").asBoolean()
                ? "no OutOfMemoryError"
                : "it DIED (exit code " + heap.path("ingester_exit_code").asInt() + ")");
  }

  private static double mib(JsonNode bytes) {
    return bytes.asLong() / (1024.0 * 1024);
  }

  private static String summary(ObjectNode r) {
    return String.format(
        "  %d lookups checked, %d false positives (%d while ingest was behind; longest window %d"
            + " ms, last %d ms after the fault), %d false negatives, accurate again %d ms after the fault; quiescence:"
            + " %.1f %% pods, %.1f %% lookups exact; %d batches lost, %d real errors; goals %s",
        r.path("lookups_checked").asLong(),
        r.path("false_positives").asLong(),
        r.path("false_positives_while_ingest_behind").asLong(),
        r.path("longest_false_positive_window_ms").asLong(),
        r.path("last_false_positive_after_fault_end_ms").asLong(),
        r.path("false_negatives").asLong(),
        r.path("accurate_again_after_fault_end_ms").asLong(),
        r.path("quiescence_pods_exact_pct").asDouble(),
        r.path("quiescence_lookups_exact_pct").asDouble(),
        r.path("batches_lost").asLong(),
        r.path("real_errors_surfaced").asLong(),
        r.path("goals_met").asBoolean() ? "met" : "MISSED");
  }
}
