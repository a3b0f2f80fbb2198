package io.kvindex.demo;

import io.kvindex.common.KvIndexException;
import io.kvindex.router.PickPolicy;
import io.kvindex.service.DurationConverter;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvindex demo}: the whole stack on this machine, with a live progress line and a summary.
 * Exit 0 when the index was exactly right at quiescence, kvindex routing beat round-robin (and, in
 * the full default run, came within 90 % of the oracle) and each injected fault was handled; 1
 * otherwise (the summary says why). Not thread-safe: picocli fills it once.
 */
@Command(
    name = "demo",
    mixinStandardHelpOptions = true,
    description = {
      "Runs the whole stack on this machine: Redis (embedded unless --redis), simulated vLLM pods,"
          + " 2 ingesters and 2 routers; routes a multi-tenant workload (or --trace) through the"
          + " routers, then the same requests by round-robin and random; midway resets one pod's"
          + " cache, restarts one pod and kills one ingester; prints the hit rates, the index's"
          + " accuracy against the pods' ground truth, ingestion figures and how each fault was"
          + " handled; then a short time-to-first-token table on engines that take time (--ttft)."
    })
public final class DemoCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Option(
      names = "--redis",
      paramLabel = "URI",
      description =
          "An existing Redis (redis://host:port, rediss:// for TLS), Redis Cluster"
              + " (redis-cluster://host1:port1,host2:port2) or Sentinel-monitored primary"
              + " (redis-sentinel://s1:p1,s2:p2#master); default: start the embedded Redis")
  String redis;

  @Option(
      names = "--pods",
      defaultValue = "8",
      description = "Simulated pods. Default: ${DEFAULT-VALUE}")
  int pods;

  @Option(
      names = "--duration",
      defaultValue = "40s",
      paramLabel = "DURATION",
      converter = DurationConverter.class,
      description =
          "How long requests are routed through kvindex, e.g. 40s, 2m, or plain seconds."
              + " Default: ${DEFAULT-VALUE}")
  Duration duration;

  @Option(
      names = "--rate",
      defaultValue = "150",
      paramLabel = "REQ/S",
      description = "Requests per second offered to the routers. Default: ${DEFAULT-VALUE}")
  double rate;

  @Option(
      names = "--trace",
      paramLabel = "FILE",
      description = "A Mooncake-format JSONL trace to replay instead of the built-in workload")
  Path trace;

  @Option(
      names = "--speed",
      paramLabel = "X",
      description =
          "With --trace: replay the trace's own arrival times compressed X times (10 = ten times"
              + " faster) instead of pacing at --rate")
  Double speed;

  @Option(
      names = "--fault",
      paramLabel = "FAULT",
      defaultValue = "none",
      description =
          "A fault injected into every pod from a quarter of the run on: none or silent-eviction"
              + " (engines evict without publishing BlockRemoved). Default: ${DEFAULT-VALUE}")
  String fault;

  @Option(
      names = "--closed-loop",
      paramLabel = "on|off",
      defaultValue = "on",
      description =
          "Whether the routers resync a pod they find over-predicted from what the engines report"
              + " (POST /observe), every 5 s at most per pod, after which its ingester infers its"
              + " engine's evictions; off, the observations are still counted and suspects"
              + " reported. Default: ${DEFAULT-VALUE}")
  String closedLoop;

  @Option(
      names = "--via",
      paramLabel = "score|epp",
      defaultValue = "score",
      description =
          "How the gateway asks kvindex: score (the routers' POST /score and POST /observe) or epp"
              + " (the endpoint picker, over Envoy's external processing protocol, the proxy's"
              + " part played here; the picker reads cached_tokens from the responses itself)."
              + " Default: ${DEFAULT-VALUE}")
  String via;

  @Option(
      names = "--model-kind",
      paramLabel = "full|swa|mamba",
      defaultValue = "full",
      description =
          "The pods' model: full (one full-attention cache group), swa (gpt-oss-like: full"
              + " attention beside a sliding window of 128 tokens, blocks of 16) or mamba (full"
              + " attention beside Mamba in align mode, blocks of 64); a hybrid's engines publish"
              + " each group's events and report the hit vLLM's coordinator computes."
              + " Default: ${DEFAULT-VALUE}")
  String modelKind;

  @Option(
      names = "--seed",
      defaultValue = "7",
      description = "Seed of the workload and the random baseline. Default: ${DEFAULT-VALUE}")
  long seed;

  @Option(
      names = "--ttft",
      paramLabel = "off|short|on|only",
      defaultValue = "short",
      description =
          "Also replay the requests on engines that take time (vLLM's scheduling loop, a step cost"
              + " model) and print time to first token per policy. short: "
              + SHORT_REQUESTS
              + " requests, kvindex with one gateway, the oracle, least-loaded and round-robin"
              + " (about 15 s more); on: --ttft-requests requests, kvindex with --gateways,"
              + " per-gateway approximate prefix routing, least-loaded, round-robin, random and the"
              + " oracle; only: the full table alone. Default: ${DEFAULT-VALUE}")
  String ttft;

  /** The requests the default (short) TTFT table replays. */
  static final int SHORT_REQUESTS = 500;

  @Option(
      names = "--gateways",
      paramLabel = "N,N,...",
      split = ",",
      defaultValue = "1,4,8",
      description =
          "With --ttft: the kvindex runs' gateway counts, each gateway with its own load view;"
              + " the last one is also the approximate prefix routing's. Default: ${DEFAULT-VALUE}")
  List<Integer> gateways;

  @Option(
      names = "--load",
      paramLabel = "FRACTION",
      defaultValue = "0.7",
      description =
          "With --ttft: the offered load as a fraction of the fleet's capacity (estimated from the"
              + " cost model with no prefix hit); the arrivals keep their shape. A --trace with"
              + " --speed keeps its own times instead. Default: ${DEFAULT-VALUE}")
  double load;

  @Option(
      names = "--ttft-requests",
      paramLabel = "N",
      defaultValue = "3000",
      description =
          "With --ttft on or only: the requests replayed in time. Default: ${DEFAULT-VALUE}")
  int ttftRequests;

  @Option(
      names = "--pick-policy",
      paramLabel = "NAME,...",
      split = ",",
      defaultValue = PickPolicy.ESTIMATED_TTFT,
      description =
          "With --ttft: the kvindex routers' pick policy, estimated-ttft (the least estimated time"
              + " to first token) or longest-prefix (the ordering before time was weighed); with"
              + " --ttft on or only,"
              + " both (estimated-ttft,longest-prefix) runs kvindex and the oracle with each."
              + " Default: ${DEFAULT-VALUE}")
  List<String> pickPolicies;

  @Option(
      names = "--gateway-load",
      paramLabel = "shared|scaled|own",
      defaultValue = "shared",
      description =
          "With --ttft: the load each kvindex gateway routes by. shared: each gateway embeds a"
              + " router with the index's shared load view (every gateway's requests and queued"
              + " prompt tokens per pod, read beside each lookup), the product's path; scaled: each"
              + " sends a router replica its own in-flight requests and queued prompt tokens per"
              + " pod times the number of gateways; own: its own alone (the router's overload"
              + " guard, 16 requests above the least loaded pod, is then blind)."
              + " Default: ${DEFAULT-VALUE}")
  String gatewayLoad;

  @Option(
      names = "--engine",
      paramLabel = "KEY=VALUE,...",
      split = ",",
      description =
          "With --ttft: the engines' scheduler limits and step cost model: max-num-seqs,"
              + " max-num-batched-tokens, fixed (s per step), prefill (s per prompt token"
              + " computed), decode (s per running sequence decoding). Default: 256, 8192, 0.005,"
              + " 40e-6, 50e-6 (Llama-3.1-8B-Instruct, BF16, one H100 80GB)")
  Map<String, String> engine;

  static io.kvindex.simulator.engine.EngineTiming timing(Map<String, String> settings) {
    io.kvindex.simulator.engine.EngineTiming d = io.kvindex.simulator.engine.EngineTiming.DEFAULT;
    if (settings == null) {
      return d;
    }
    int seqs = d.maxNumSeqs();
    int tokens = d.maxNumBatchedTokens();
    double fixed = d.fixedSeconds();
    double prefill = d.prefillTokenSeconds();
    double decode = d.decodeSequenceSeconds();
    for (Map.Entry<String, String> e : settings.entrySet()) {
      try {
        switch (e.getKey()) {
          case "max-num-seqs" -> seqs = Integer.parseInt(e.getValue());
          case "max-num-batched-tokens" -> tokens = Integer.parseInt(e.getValue());
          case "fixed" -> fixed = Double.parseDouble(e.getValue());
          case "prefill" -> prefill = Double.parseDouble(e.getValue());
          case "decode" -> decode = Double.parseDouble(e.getValue());
          default ->
              throw new IllegalArgumentException(
                  "--engine knows max-num-seqs, max-num-batched-tokens, fixed, prefill and"
                      + " decode, not "
                      + e.getKey());
        }
      } catch (NumberFormatException bad) {
        throw new IllegalArgumentException(
            "--engine " + e.getKey() + " must be a number, got " + e.getValue(), bad);
      }
    }
    return new io.kvindex.simulator.engine.EngineTiming(seqs, tokens, fixed, prefill, decode);
  }

  private static String gatewayLoad(String value) {
    if (!List.of("scaled", "own", "shared").contains(value)) {
      throw new IllegalArgumentException(
          "--gateway-load must be scaled, own or shared, got " + value);
    }
    return value;
  }

  private static boolean onOff(String value) {
    return onOff(value, "--closed-loop");
  }

  private static boolean onOff(String value, String option) {
    return switch (value) {
      case "on" -> true;
      case "off" -> false;
      default -> throw new IllegalArgumentException(option + " must be on or off, got " + value);
    };
  }

  @Override
  public Integer call() throws InterruptedException {
    DemoConfig config;
    TtftComparison.Options timed;
    try {
      if (!List.of("off", "short", "on", "only").contains(ttft)) {
        throw new IllegalArgumentException("--ttft must be off, short, on or only, got " + ttft);
      }
      if (gateways.isEmpty() || gateways.stream().anyMatch(g -> g < 1)) {
        throw new IllegalArgumentException("--gateways must be counts >= 1, got " + gateways);
      }
      if (!(load > 0)) {
        throw new IllegalArgumentException("--load must be > 0, got " + load);
      }
      if (ttftRequests < 1) {
        throw new IllegalArgumentException("--ttft-requests must be >= 1, got " + ttftRequests);
      }
      for (String p : pickPolicies) {
        TtftComparison.policy(p);
      }
      boolean full = !ttft.equals("short");
      timed =
          new TtftComparison.Options(
              full ? gateways : List.of(1),
              load,
              full ? ttftRequests : SHORT_REQUESTS,
              timing(engine),
              gatewayLoad(gatewayLoad),
              full ? List.copyOf(pickPolicies) : List.of(pickPolicies.get(0)),
              full);
      config =
          DemoConfig.builder()
              .redisUri(redis)
              .pods(pods)
              .duration(duration)
              .requestsPerSecond(rate)
              .trace(trace)
              .speed(speed)
              .fault(DemoConfig.Fault.named(fault))
              .closedLoop(onOff(closedLoop))
              .via(DemoConfig.Via.named(via))
              .modelKind(io.kvindex.simulator.ModelKind.named(modelKind))
              .seed(seed)
              .build();
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), e.getMessage(), e);
    }
    PrintWriter out = spec.commandLine().getOut();
    DemoReport report = null;
    String ttftTable = null;
    try {
      if (!ttft.equals("only")) {
        report = Demo.run(config, out);
      }
      if (!ttft.equals("off")) {
        TtftComparison comparison = new TtftComparison(config, timed, out);
        ttftTable = comparison.render(comparison.run());
      }
    } catch (KvIndexException e) {
      // Redis unreachable or refusing, the stack not coming up in time: one line, exit 1.
      spec.commandLine().getErr().println("kvindex demo: " + e.getMessage());
      return 1;
    }
    if (report != null) {
      out.print(report.render());
    }
    if (ttftTable != null) {
      out.print(ttftTable);
    }
    out.flush();
    return report == null ? 0 : report.exitCode();
  }
}
