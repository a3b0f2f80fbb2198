package io.kvindex.simulator;

import io.kvindex.common.KvIndexException;
import io.kvindex.hash.HashAlgorithm;
import io.kvindex.service.DurationConverter;
import io.kvindex.service.HttpService;
import io.kvindex.simulator.load.LoadRunner;
import io.kvindex.simulator.load.SyntheticWorkload;
import io.kvindex.simulator.load.TraceWriter;
import io.kvindex.simulator.load.Workload;
import io.kvindex.wire.HashEncoding;
import io.kvindex.wire.ReplayFraming;
import io.kvindex.wire.WireEra;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code kvindex sim}: runs a simulated vLLM fleet, prints each pod's endpoints, drives it with a
 * Mooncake trace or the synthetic multi-tenant workload, and prints the fleet's prefix-cache hit
 * rate periodically. Not thread-safe (one instance per command line).
 */
@Command(
    name = "sim",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Run a simulated vLLM fleet that publishes KV events exactly as vLLM does (ZeroMQ PUB +"
          + " replay ROUTER, one HTTP endpoint per pod), drive it with a Mooncake-format trace or a"
          + " synthetic multi-tenant chat workload, and print the prefix-cache hit rate.",
      "Runs until the trace ends, --duration or --max-requests is reached, or Ctrl-C."
    })
public final class SimCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Option(
      names = "--pods",
      paramLabel = "N",
      defaultValue = "4",
      description = "Pods (default: ${DEFAULT-VALUE}).")
  int pods;

  @Option(
      names = "--trace",
      paramLabel = "FILE",
      description = "A Mooncake-format JSONL trace; without it, the synthetic workload runs.")
  Path trace;

  @Option(
      names = "--trace-block-tokens",
      paramLabel = "TOKENS",
      defaultValue = "512",
      description = "Tokens per trace hash id (default: ${DEFAULT-VALUE}).")
  int traceBlockTokens;

  @Option(
      names = "--rate",
      paramLabel = "R",
      description =
          "Requests per second, Poisson (default: 10 for the synthetic workload; a trace keeps its"
              + " own timestamps unless this is set).")
  Double rate;

  @Option(
      names = "--speed",
      paramLabel = "X",
      defaultValue = "1",
      converter = SpeedConverter.class,
      description =
          "Time scaling: 1 = real time, 10 = ten times faster, max = no pacing (default: ${DEFAULT-VALUE}).")
  double speed;

  @Option(
      names = "--duration",
      paramLabel = "D",
      converter = DurationConverter.class,
      description = "Stop after this much workload time, e.g. 90s, 5m, 1h (default: no limit).")
  Duration duration;

  @Option(
      names = "--max-requests",
      paramLabel = "N",
      defaultValue = "9223372036854775807",
      description = "Stop after this many requests (default: no limit).")
  long maxRequests;

  @Option(
      names = "--era",
      paramLabel = "ERA",
      defaultValue = "MAP",
      description = "Payload layout, one of ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
  WireEra era;

  @Option(
      names = "--hash-encoding",
      paramLabel = "ENC",
      defaultValue = "UINT64",
      description =
          "Hashes on the wire, one of ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
  HashEncoding hashEncoding;

  @Option(
      names = "--block-size",
      paramLabel = "TOKENS",
      defaultValue = "16",
      description = "Tokens per KV block (default: ${DEFAULT-VALUE}).")
  int blockSize;

  @Option(
      names = "--capacity-blocks",
      paramLabel = "N",
      defaultValue = "32768",
      description = "GPU KV-cache blocks per engine (default: ${DEFAULT-VALUE}).")
  int capacityBlocks;

  @Option(
      names = "--cpu-blocks",
      paramLabel = "N",
      defaultValue = "0",
      description = "CPU offload tier blocks per engine, 0 = none (default: ${DEFAULT-VALUE}).")
  int cpuBlocks;

  @Option(
      names = "--dp",
      paramLabel = "N",
      defaultValue = "1",
      description = "Data-parallel engines per pod, on port + rank (default: ${DEFAULT-VALUE}).")
  int dataParallel;

  @Option(
      names = "--hash-mode",
      paramLabel = "MODE",
      defaultValue = "ENGINE",
      description =
          "ENGINE = --hash-algo with --hash-seed, RANDOM = a private seed per engine process"
              + " (default: ${DEFAULT-VALUE}).")
  HashMode hashMode;

  @Option(
      names = "--hash-algo",
      paramLabel = "ALGO",
      defaultValue = "sha256_cbor",
      description =
          "The engines' --prefix-caching-hash-algo for ENGINE mode: sha256, sha256_cbor, xxhash,"
              + " xxhash_cbor or sha256_cbor_64bit (default: ${DEFAULT-VALUE}).")
  String hashAlgorithm;

  @Option(
      names = "--hash-seed",
      paramLabel = "SEED",
      defaultValue = "0",
      description =
          "The engines' PYTHONHASHSEED for ENGINE mode; 'unset' for engines started without it"
              + " (vLLM's default seed) (default: ${DEFAULT-VALUE}).")
  String hashSeed;

  @Option(
      names = "--topic",
      paramLabel = "TOPIC",
      defaultValue = "",
      description =
          "The topic frame; {pod} and {model} are replaced, e.g. kv@{pod}@{model} (default: empty).")
  String topic;

  @Option(
      names = "--models",
      paramLabel = "M",
      split = ",",
      defaultValue = "sim-model",
      description =
          "Models, comma-separated; pods are assigned in turn (default: ${DEFAULT-VALUE}).")
  List<String> models;

  @Option(
      names = "--router",
      paramLabel = "R",
      defaultValue = "random",
      description =
          "random, round-robin, oracle (scores from the pods' true caches with the router's pick"
              + " policy: the ceiling of any router), or kvindex routers' URLs, comma-separated (e.g."
              + " http://router-1:8190,http://router-2:8190: each request is routed by POST /score)"
              + " (default: ${DEFAULT-VALUE}).")
  String router;

  @Option(
      names = "--router-token-file",
      paramLabel = "FILE",
      description =
          "With router URLs: a file holding the routers' auth token (their --auth-token-file),"
              + " sent as 'Authorization: Bearer <token>' (default: none).")
  Path routerTokenFile;

  @Option(
      names = "--replay-framing",
      paramLabel = "F",
      defaultValue = "WITH_TOPIC",
      description = "Replay replies, one of ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
  ReplayFraming replayFraming;

  @Option(
      names = "--replay-buffer",
      paramLabel = "N",
      defaultValue = "10000",
      description = "Batches the replay ring holds (default: ${DEFAULT-VALUE}).")
  int replayBuffer;

  @Option(
      names = "--bind-host",
      paramLabel = "HOST",
      defaultValue = "127.0.0.1",
      description =
          "Host the PUB, replay and HTTP sockets bind on, e.g. 0.0.0.0 (default:"
              + " ${DEFAULT-VALUE}).")
  String bindHost;

  @Option(
      names = "--publish-port",
      paramLabel = "PORT",
      defaultValue = "0",
      description =
          "First PUB port: pod i binds PORT + i x --dp (ranks add their rank); 0 = free ports"
              + " (default: ${DEFAULT-VALUE}).")
  int publishPort;

  @Option(
      names = "--replay-port",
      paramLabel = "PORT",
      defaultValue = "0",
      description =
          "First replay ROUTER port, numbered like --publish-port; 0 = free ports (default:"
              + " ${DEFAULT-VALUE}).")
  int replayPort;

  @Option(
      names = "--http-port",
      paramLabel = "PORT",
      defaultValue = "0",
      description =
          "First HTTP port (/metrics, the dev endpoints): pod i binds PORT + i; 0 = free ports"
              + " (default: ${DEFAULT-VALUE}).")
  int httpPort;

  @Option(
      names = "--report-every",
      paramLabel = "D",
      defaultValue = "5s",
      converter = DurationConverter.class,
      description = "How often to print the hit rate (default: ${DEFAULT-VALUE}).")
  Duration reportEvery;

  @Option(
      names = "--seed",
      paramLabel = "S",
      defaultValue = "1",
      description = "Random seed (default: ${DEFAULT-VALUE}).")
  long seed;

  @Option(
      names = "--write-trace",
      paramLabel = "FILE",
      description =
          "Write a Mooncake-format trace shaped like the public conversation traces (multi-turn"
              + " sessions, about 12 000-token prompts) to FILE and exit: --max-requests records"
              + " (default 12000), arriving at --rate (default 150/s), seeded by --seed.")
  Path writeTrace;

  /** The records {@code --write-trace} writes when {@code --max-requests} is not given. */
  static final int DEFAULT_TRACE_REQUESTS = 12_000;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    if (writeTrace != null) {
      return writeTrace(out, err);
    }
    try (SimulatedFleet fleet = startFleet();
        Workload workload = workload()) {
      SimOutput.printEndpoints(fleet, out);
      LoadRunner runner = new LoadRunner(fleet, runOptions());
      CountDownLatch finished = new CountDownLatch(1);
      Thread hook =
          new Thread(
              () -> {
                runner.stop();
                awaitQuietly(finished);
              },
              "sim-shutdown");
      Runtime.getRuntime().addShutdownHook(hook);
      long start = System.nanoTime();
      try {
        FleetStats end = runner.run(workload, stats -> SimOutput.report(out, start, stats));
        out.printf(Locale.ROOT, "done: %s%n", SimOutput.line(start, end));
        out.flush();
      } finally {
        finished.countDown();
        removeHook(hook);
      }
      return 0;
    } catch (KvIndexException | IllegalArgumentException | IllegalStateException e) {
      err.println("sim: " + e.getMessage());
      return 1;
    } catch (IOException | UncheckedIOException e) {
      err.println("sim: cannot read the trace: " + e.getMessage());
      return 1;
    }
  }

  private SimulatedFleet startFleet() {
    PodConfig template =
        PodConfig.builder()
            .capacityBlocks(capacityBlocks)
            .cpuCapacityBlocks(cpuBlocks)
            .blockSize(blockSize)
            .dataParallelSize(dataParallel)
            .era(era)
            .hashEncoding(hashEncoding)
            .hashMode(hashMode)
            .hashAlgorithm(HashAlgorithm.fromVllmName(hashAlgorithm))
            .hashSeed(hashSeed.equals("unset") ? null : hashSeed)
            .topic(topic)
            .replayFraming(replayFraming)
            .replayBufferSteps(replayBuffer)
            .publishBind("tcp://" + bindHost + ":" + publishPort)
            .replayBind("tcp://" + bindHost + ":" + replayPort)
            .httpBind(new InetSocketAddress(bindHost, httpPort))
            .build();
    return SimulatedFleet.builder()
        .pods(pods)
        .models(models)
        .podTemplate(template)
        .router(router())
        .seed(seed)
        .build();
  }

  private int writeTrace(PrintWriter out, PrintWriter err) {
    int requests =
        maxRequests == Long.MAX_VALUE
            ? DEFAULT_TRACE_REQUESTS
            : (int) Math.min(Integer.MAX_VALUE, maxRequests);
    double at = rate == null ? 150 : rate;
    try {
      TraceWriter.write(writeTrace, requests, at, seed);
    } catch (IOException | IllegalArgumentException e) {
      err.println("kvindex sim: cannot write the trace " + writeTrace + ": " + e.getMessage());
      return 1;
    }
    out.printf(Locale.ROOT, "wrote %d requests at %.0f/s to %s%n", requests, at, writeTrace);
    out.flush();
    return 0;
  }

  private PodRouter router() {
    return switch (router) {
      case "random" -> PodRouter.random(seed);
      case "round-robin" -> PodRouter.roundRobin();
      case "oracle" -> PodRouter.oracle(OraclePick.standard());
      default -> {
        if (!router.startsWith("http://") && !router.startsWith("https://")) {
          throw new IllegalArgumentException(
              "--router must be random, round-robin, oracle or router URLs (http://host:port,...), got "
                  + router);
        }
        List<URI> urls = new ArrayList<>();
        for (String url : router.split(",")) {
          urls.add(URI.create(url.trim()));
        }
        yield PodRouter.scoring(
            urls, routerTokenFile == null ? null : HttpService.readAuthToken(routerTokenFile));
      }
    };
  }

  private Workload workload() throws IOException {
    if (trace != null) {
      return Workload.mooncakeTrace(trace, traceBlockTokens);
    }
    return Workload.synthetic(
        SyntheticWorkload.Options.defaults()
            .withSeed(seed)
            .withRate(rate == null ? 10 : rate)
            .withModels(models));
  }

  private LoadRunner.Options runOptions() {
    return LoadRunner.Options.defaults()
        .withSpeed(speed)
        .withRate(trace != null ? rate : null)
        .withDuration(duration)
        .withMaxRequests(maxRequests)
        .withReportEvery(reportEvery);
  }

  private static void awaitQuietly(CountDownLatch latch) {
    try {
      latch.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static void removeHook(Thread hook) {
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException shuttingDown) {
      // the JVM is already exiting; the hook has run or is running
    }
  }
}
