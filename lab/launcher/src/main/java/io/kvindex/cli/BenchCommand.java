package io.kvindex.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvindex.bench.BenchOptions;
import io.kvindex.bench.Benchmarks;
import io.kvindex.redis.RedisUnavailableException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.function.Supplier;
import picocli.CommandLine.Command;
import picocli.CommandLine.HelpCommand;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code kvindex bench}: the end-to-end benchmarks. Each subcommand writes one JSON object to
 * {@code --out} and prints its headline figures. Not thread-safe (one instance per command line).
 */
@Command(
    name = "bench",
    mixinStandardHelpOptions = true,
    synopsisSubcommandLabel = "BENCHMARK",
    description = {
      "Measure kvindex against real redis-server processes and write the figures as JSON.",
      "Measurements, not pass/fail tests: compare the figures with the goals in BENCHMARKS.md."
    },
    subcommands = {
      HelpCommand.class,
      BenchCommand.Index.class,
      BenchCommand.Router.class,
      BenchCommand.Ingest.class,
      BenchCommand.Compare.class,
      BenchCommand.Scale.class,
      BenchCommand.Epp.class
    })
public final class BenchCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Override
  public Integer call() {
    spec.commandLine().getErr().println("kvindex bench: missing benchmark");
    spec.commandLine().usage(spec.commandLine().getErr());
    return spec.exitCodeOnInvalidInput();
  }

  /** The options every benchmark takes. */
  static final class Common {
    @Option(
        names = "--quick",
        description = "Smaller sizes: finishes in under a minute (a check, not a result).")
    boolean quick;

    @Option(
        names = "--out",
        paramLabel = "FILE",
        required = true,
        description = "Where to write the JSON result.")
    Path out;
  }

  @Command(
      name = "index",
      mixinStandardHelpOptions = true,
      sortOptions = false,
      description = {
        "The index core on one standalone Redis: lookup latency (256-block prompt, 64 candidate"
            + " pods, >= 1,000,000 entries) against PING; the longest Redis command of a purge and"
            + " its cleanup per pod size against a naive purge; memory per entry; apply"
            + " throughput against pipelined SADD.",
        "Starts a local redis-server unless --redis names one. A user's server is never"
            + " flushed: the run writes under fresh index names, deletes those keys afterwards,"
            + " and while purging sets slowlog-log-slower-than 50 and slowlog-max-len 50000"
            + " (restored after)."
      })
  static final class Index implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Common common;

    @Option(
        names = "--redis",
        paramLabel = "URI",
        description = "Your own standalone Redis, redis://[user:password@]host:port.")
    String redis;

    @Override
    public Integer call() {
      BenchOptions options = new BenchOptions(common.quick, Optional.ofNullable(redis));
      return run(
          spec,
          common.out,
          () -> Benchmarks.index(options),
          List.of(
              "ping_p50_us",
              "lookup_p50_us",
              "lookup_p99_us",
              "lookup_hot_p50_us",
              "purge_max_command_us",
              "purge_max_undisturbed_call_us",
              "purge_cleanup_ms",
              "naive_purge_max_command_us",
              "memory_bytes_per_entry",
              "apply_blocks_per_s",
              "sadd_pipelined_per_s"));
    }
  }

  @Command(
      name = "router",
      mixinStandardHelpOptions = true,
      sortOptions = false,
      description = {
        "Lookups per second and latency percentiles with 1 and 8 client threads sharing one"
            + " client, on a standalone server and on a 3-primary Redis Cluster (both local"
            + " redis-server processes started here); 256-block prompts, 64 candidate pods."
      })
  static final class Router implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Common common;

    @Override
    public Integer call() {
      return run(
          spec,
          common.out,
          () -> Benchmarks.router(BenchOptions.local(common.quick)),
          List.of("standalone", "cluster"));
    }
  }

  @Command(
      name = "epp",
      mixinStandardHelpOptions = true,
      sortOptions = false,
      description = {
        "The endpoint picker's added latency as a proxy sees it: request headers (and a"
            + " 4,096-token token-id body right behind them, full-duplex streamed) in, the pick"
            + " out, with 16 candidates, one request at a time; against the router library's"
            + " score and pick of the same prompts in the same run. Starts a local Redis."
      })
  static final class Epp implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Common common;

    @Override
    public Integer call() {
      return run(
          spec,
          common.out,
          () -> Benchmarks.epp(BenchOptions.local(common.quick)),
          List.of("results"));
    }
  }

  @Command(
      name = "ingest",
      mixinStandardHelpOptions = true,
      sortOptions = false,
      description = {
        "Ingester replicas applying the KV events of 64 pods (a light publisher replaying"
            + " pre-encoded batches over real ZMQ sockets) to a local Redis, against what one"
            + " client applies to the same Redis in the same run: the lag from event timestamp"
            + " to applied at a stated offered load, then the sustained blocks per second at"
            + " saturation, with one replica and with two."
      })
  static final class Ingest implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Common common;

    @Override
    public Integer call() {
      return run(
          spec,
          common.out,
          () -> Benchmarks.ingest(BenchOptions.local(common.quick)),
          List.of(
              "blocks_per_s",
              "apply_blocks_per_s",
              "ingest_to_apply_ratio",
              "two_replicas_blocks_per_s",
              "lag_p50_ms",
              "lag_p99_ms",
              "lag_within_5ms_pct",
              "offered_blocks_per_s"));
    }
  }

  @Command(
      name = "compare",
      mixinStandardHelpOptions = true,
      sortOptions = false,
      description = {
        "kvindex, the llm-d Redis layout and an in-process index behind one driver, on one"
            + " workload (64 pods, 256-block prompts, >= 1,000,000 entries) and one local Redis:"
            + " lookup p50/p99 and lookups/s at 1 and 8 client threads, Redis CPU per lookup,"
            + " memory per entry, apply blocks/s, the longest Redis command while a 10k/100k/1M-block"
            + " pod is cleared and whether a concurrent lookup saw part of the clear; with"
            + " kvindex / llm-d layout ratios."
      })
  static final class Compare implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Common common;

    @Override
    public Integer call() {
      return run(
          spec,
          common.out,
          () -> Benchmarks.compare(BenchOptions.local(common.quick)),
          List.of("figures", "ratios_kvindex_to_llmd_layout"));
    }
  }

  @Command(
      name = "scale",
      mixinStandardHelpOptions = true,
      sortOptions = false,
      description = {
        "Sweeps one axis at a time and writes scale.json and a PNG chart per sweep into DIR:"
            + " prompt length 16..8192 blocks (kvindex and the llm-d layout, and the router's"
            + " hashing), candidates 8..1024 pods, index size 1M..100M entries (as far as memory"
            + " allows), index groups 1..16 on a 3-primary Redis Cluster, and offered ingest load"
            + " up to the knee. Every curve is fitted (flat, logarithmic, linear)."
      })
  static final class Scale implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(
        names = "--quick",
        description = "Smaller sizes: finishes in under a minute (a check, not a result).")
    boolean quick;

    @Option(
        names = "--out",
        paramLabel = "DIR",
        required = true,
        description = "The directory to write scale.json and the charts into.")
    Path out;

    @Override
    public Integer call() {
      JsonNode result = guarded(() -> Benchmarks.scale(BenchOptions.local(quick), out));
      PrintWriter stdout = spec.commandLine().getOut();
      for (String sweep :
          List.of("prompt_length", "candidates", "index_size", "cluster", "ingest")) {
        for (JsonNode fit : result.path(sweep).path("fits")) {
          stdout.println(fit.path("line").asText());
        }
      }
      stdout.println("capacity_check: " + result.path("capacity_check"));
      stdout.println("wrote " + out.resolve("scale.json"));
      stdout.flush();
      return 0;
    }
  }

  /** Runs a benchmark, writes its result and prints the headline fields. */
  static int run(CommandSpec spec, Path out, Supplier<JsonNode> benchmark, List<String> headline) {
    JsonNode result = guarded(benchmark);
    Benchmarks.write(out, result);
    PrintWriter stdout = spec.commandLine().getOut();
    for (String field : headline) {
      stdout.println(field + ": " + result.path(field));
    }
    stdout.println("wrote " + out);
    stdout.flush();
    return 0;
  }

  private static JsonNode guarded(Supplier<JsonNode> benchmark) {
    try {
      return benchmark.get();
    } catch (IllegalArgumentException e) {
      throw new InputException(e.getMessage(), e);
    } catch (RedisUnavailableException e) {
      throw new InputException("cannot reach Redis: " + e.getMessage(), e);
    }
  }
}
