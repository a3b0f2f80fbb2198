package io.kvindex.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.KeyMode;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.localredis.LocalRedis;
import io.kvindex.localredis.LocalRedisCluster;
import io.kvindex.redis.RedisConnector;
import io.kvindex.router.KvRouter;
import io.kvindex.router.ModelKeys;
import io.kvindex.router.Scores;
import java.io.PrintWriter;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code kvindex bench router}: lookups per second and latency of {@code KvRouter.score} (key
 * hashing, one lookup script per index group, decoding) with 1 and 8 client threads, on a local
 * standalone Redis and a local 3-primary Redis Cluster that it starts and seeds itself.
 *
 * <p>Run: {@code scripts/kvindex bench router --quick --out router.json}. Not thread-safe.
 */
@Command(
    name = "router",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Measure KvRouter.score (hashing + lookup) with 1 and 8 client threads on a local standalone"
          + " Redis and a local Redis Cluster; write lookups_per_s and latency percentiles as JSON."
    })
final class RouterBench implements Callable<Integer> {
  private static final String MODEL = "bench-model";
  private static final int PROMPTS = 64;

  @Spec CommandSpec spec;

  @Option(names = "--out", required = true, paramLabel = "FILE", description = "JSON result file.")
  Path out;

  @Option(names = "--quick", description = "2 s per measurement instead of 10 s.")
  boolean quick;

  @Option(
      names = "--prompt-tokens",
      defaultValue = "2048",
      description = "Tokens per prompt (default: ${DEFAULT-VALUE}).")
  int promptTokens;

  @Option(
      names = "--pods",
      defaultValue = "16",
      description = "Candidate pods per lookup (default: ${DEFAULT-VALUE}).")
  int pods;

  @Option(
      names = "--block-size",
      defaultValue = "16",
      description = "Tokens per block (default: ${DEFAULT-VALUE}).")
  int blockSize;

  @Override
  public Integer call() throws Exception {
    if (promptTokens < blockSize || pods < 1 || blockSize < 1) {
      throw new picocli.CommandLine.ParameterException(
          spec.commandLine(), "need --prompt-tokens >= --block-size >= 1 and --pods >= 1");
    }
    PrintWriter log = spec.commandLine().getErr();
    ObjectMapper json = new ObjectMapper();
    ObjectNode result = json.createObjectNode();
    result.put("prompt_tokens", promptTokens);
    result.put("block_size", blockSize);
    result.put("pods", pods);
    result.put("key_mode", "engine sha256_cbor");
    result.put("seconds_per_run", seconds());
    result.put("cpus", Runtime.getRuntime().availableProcessors());
    ArrayNode runs = result.putArray("results");
    try (LocalRedis redis = LocalRedis.start()) {
      measure("standalone", redis.uri().toString(), 1, runs, log);
    }
    try (LocalRedisCluster cluster = LocalRedisCluster.builder().replicasPerPrimary(0).start()) {
      String seeds =
          cluster.seedUris().stream().map(URI::toString).collect(Collectors.joining(","));
      measure("cluster", seeds, 3, runs, log);
    }
    Files.writeString(out, json.writerWithDefaultPrettyPrinter().writeValueAsString(result) + "\n");
    spec.commandLine()
        .getOut()
        .println(json.writerWithDefaultPrettyPrinter().writeValueAsString(result));
    return 0;
  }

  private double seconds() {
    return quick ? 2.0 : 10.0;
  }

  private void measure(String topology, String uri, int groups, ArrayNode runs, PrintWriter log)
      throws InterruptedException {
    List<String> podNames = new ArrayList<>();
    for (int p = 0; p < pods; p++) {
      podNames.add("pod-" + p);
    }
    try (KvRouter router =
        KvRouter.builder()
            .redisUri(uri)
            .indexName("bench")
            .groups(groups)
            .model(MODEL, ModelKeys.engine("sha256_cbor", "0", blockSize))
            .lookupBudget(Duration.ofMillis(250))
            .build()) {
      int[][] prompts = prompts();
      seed(uri, groups, router, prompts, podNames);
      for (int threads : new int[] {1, 8}) {
        log.println("bench router: " + topology + ", " + threads + " thread(s)");
        log.flush();
        run(router, prompts, podNames, threads, Duration.ofMillis(500)); // warm-up
        ObjectNode r =
            run(router, prompts, podNames, threads, Duration.ofMillis((long) (seconds() * 1000)));
        r.put("topology", topology);
        r.put("index_groups", groups);
        runs.add(r);
      }
    }
  }

  private int[][] prompts() {
    Random random = new Random(7);
    int[][] prompts = new int[PROMPTS][promptTokens];
    for (int[] prompt : prompts) {
      for (int i = 0; i < prompt.length; i++) {
        prompt[i] = random.nextInt(150_000);
      }
    }
    return prompts;
  }

  /** Each pod holds a random-depth prefix of a random half of the prompts. */
  private void seed(
      String uri, int groups, KvRouter router, int[][] prompts, List<String> podNames) {
    Random random = new Random(11);
    try (RedisConnector connector = RedisConnector.connect(uri);
        PrefixIndex index =
            PrefixIndex.builder()
                .indexName("bench")
                .groups(groups)
                .keyMode(MODEL, KeyMode.ENGINE)
                .podTtl(Duration.ofHours(1))
                .redis(connector)
                .build()) {
      for (String pod : podNames) {
        StreamId stream = StreamId.of(MODEL, pod);
        long token = index.acquireLease(stream, "bench", Duration.ofHours(1)).orElseThrow();
        long seq = 1;
        for (int[] prompt : prompts) {
          if (random.nextBoolean()) {
            long[] keys = router.blockKeys(MODEL, null, null, prompt);
            List<Long> held = new ArrayList<>();
            for (int b = 0; b < 1 + random.nextInt(keys.length); b++) {
              held.add(keys[b]);
            }
            BlockStored stored = BlockStored.of(held, null, List.of(), blockSize);
            index.apply(stream, seq++, token, KvEventBatch.of(0, List.of(stored), 0));
          }
        }
      }
    }
  }

  private static ObjectNode run(
      KvRouter router, int[][] prompts, List<String> pods, int threads, Duration duration)
      throws InterruptedException {
    AtomicLong unavailable = new AtomicLong();
    Histogram[] histograms = new Histogram[threads];
    Thread[] workers = new Thread[threads];
    long end = System.nanoTime() + duration.toNanos();
    for (int t = 0; t < threads; t++) {
      Histogram h = new Histogram(60_000_000_000L, 3);
      histograms[t] = h;
      Random random = new Random(t);
      workers[t] =
          new Thread(
              () -> {
                while (System.nanoTime() < end) {
                  int[] prompt = prompts[random.nextInt(prompts.length)];
                  long start = System.nanoTime();
                  Scores scores = router.score(MODEL, null, prompt, pods);
                  h.recordValue(System.nanoTime() - start);
                  if (!scores.indexAvailable()) {
                    unavailable.incrementAndGet();
                  }
                }
              },
              "bench-router-" + t);
      workers[t].start();
    }
    for (Thread w : workers) {
      w.join();
    }
    Histogram all = new Histogram(60_000_000_000L, 3);
    for (Histogram h : histograms) {
      all.add(h);
    }
    ObjectMapper json = new ObjectMapper();
    ObjectNode r = json.createObjectNode();
    r.put("threads", threads);
    r.put("lookups", all.getTotalCount());
    r.put("lookups_per_s", Math.round(all.getTotalCount() / (duration.toNanos() / 1e9)));
    r.put("p50_us", all.getValueAtPercentile(50) / 1000.0);
    r.put("p99_us", all.getValueAtPercentile(99) / 1000.0);
    r.put("max_us", all.getMaxValue() / 1000.0);
    r.put("unavailable", unavailable.get());
    return r;
  }
}
