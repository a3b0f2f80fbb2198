package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.kvindex.epp.Candidates;
import io.kvindex.epp.Endpoint;
import io.kvindex.epp.EppConfig;
import io.kvindex.epp.EppServer;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.localredis.LocalRedis;
import io.kvindex.redis.RedisConnector;
import io.kvindex.router.KvRouter;
import io.kvindex.router.LoadSignal;
import io.kvindex.router.ModelKeys;
import io.kvindex.router.Scores;
import io.kvindex.simulator.PodConfig;
import io.kvindex.simulator.SimulatedPod;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

/**
 * {@code kvindex bench epp}: the endpoint picker's own added latency, as the proxy sees it: from
 * sending a request's headers (its body, 4 096 token ids, right behind them, full-duplex streamed
 * as the reference picker runs) to the answer carrying the pick, with 16 candidate endpoints, one
 * request at a time over a real gRPC socket; against, in the same run, the router library's score
 * and pick of the same prompt in-process (the part of it that is the index's); and the same for
 * chat prompts of about as many words, which the picker has a simulated engine tokenize ({@code
 * POST /tokenize} on loopback: the cost of that path's round trip); and, interleaved with the
 * token-id requests, requests without a body, which the picker answers by load at their headers (no
 * JSON, no Redis): the gRPC round trip and the stream's handling alone, the floor under the others.
 * Each request's response (its usage) is reported back so that the picker does all it does per
 * request.
 *
 * <p>The goal (p50 at most 1 ms, p99 at most 5 ms) is judged at the picker, as it names it: from
 * the request-headers message in to the message carrying the pick out, read from the histogram the
 * picker exposes ({@code kvindex_epp_pick_seconds{at="body"}}, and {@code at="headers"} for the
 * requests without a body), its quantiles interpolated within the histogram's buckets as
 * Prometheus's {@code histogram_quantile} does, over the measured requests only. The proxy's round
 * trip is reported beside it.
 *
 * <p>Run: {@code scripts/kvindex bench epp [--quick] --out FILE}. Not thread-safe.
 */
final class EppBenchmark {
  private static final String MODEL = "bench/epp";
  private static final int PROMPT_TOKENS = 4096;
  private static final int BLOCK = 16;
  private static final int CANDIDATES = 16;

  private EppBenchmark() {}

  static ObjectNode run(BenchOptions options) {
    if (options.redisUri().isPresent()) {
      throw new IllegalArgumentException("bench epp starts its own Redis; it takes no --redis");
    }
    long start = System.nanoTime();
    ObjectNode json = Reports.header("epp", options);
    int requests = options.quick() ? 400 : 5000;
    int warmup = options.quick() ? 100 : 1000;
    ObjectNode setup = json.putObject("setup");
    setup.put("prompt_tokens", PROMPT_TOKENS);
    setup.put("candidates", CANDIDATES);
    setup.put("body_mode", "FULL_DUPLEX_STREAMED");
    setup.put("requests", requests);
    setup.put("warmup", warmup);
    try (LocalRedis redis = LocalRedis.start()) {
      String uri = redis.uri().toString();
      List<Endpoint> endpoints = new ArrayList<>();
      // The first candidate is a simulated engine, whose POST /tokenize the chat path asks (the
      // least loaded candidate is asked, and every load is 0); the others are addresses only.
      SimulatedPod engine =
          SimulatedPod.start(
              PodConfig.builder().name("pod-0").model(MODEL).blockSize(BLOCK).build());
      URI engineHttp = engine.httpAddress();
      endpoints.add(Endpoint.of("pod-0", engineHttp.getHost(), engineHttp.getPort()));
      for (int i = 1; i < CANDIDATES; i++) {
        endpoints.add(Endpoint.of("pod-" + i, "127.0.0." + (10 + i), 8000));
      }
      PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
      try (RedisConnector connector = RedisConnector.connect(uri);
          PrefixIndex index =
              PrefixIndex.builder().indexName("bench-epp").redis(connector).build();
          KvRouter router =
              KvRouter.builder()
                  .redisUri(uri)
                  .indexName("bench-epp")
                  .model(MODEL, ModelKeys.engine("sha256_cbor", "42", BLOCK))
                  .lookupBudget(Duration.ofMillis(250))
                  .meterRegistry(registry)
                  .build()) {
        List<int[]> prompts = prompts(requests + warmup);
        fill(index, router, prompts);
        LatencyRecorder library = new LatencyRecorder();
        List<String> pods = endpoints.stream().map(Endpoint::pod).toList();
        for (int i = 0; i < prompts.size(); i++) {
          long t0 = System.nanoTime();
          Scores s = router.score(MODEL, null, prompts.get(i), pods);
          router.pick(s, pods, LoadSignal.none());
          if (i >= warmup) {
            library.recordNanos(System.nanoTime() - t0);
          }
        }
        LatencyRecorder picker = new LatencyRecorder();
        LatencyRecorder chat = new LatencyRecorder();
        LatencyRecorder noBody = new LatencyRecorder();
        Map<String, double[]> stepsAtWarmup = Map.of();
        Map<String, double[]> stepsMeasured = Map.of();
        Map<String, double[]> insideAtWarmup = Map.of();
        Map<String, double[]> insideMeasured = Map.of();
        try (EppServer server =
            EppServer.start(
                EppConfig.builder()
                    .listen(new InetSocketAddress("127.0.0.1", 0))
                    .metricsListen(new InetSocketAddress("127.0.0.1", 0))
                    .scrapeInterval(Duration.ZERO)
                    .models(Set.of(MODEL), false, Map.of())
                    .build(),
                router,
                Candidates.of(endpoints),
                registry)) {
          ManagedChannel channel =
              NettyChannelBuilder.forAddress("127.0.0.1", server.address().getPort())
                  .usePlaintext()
                  .build();
          try {
            for (int i = 0; i < prompts.size(); i++) {
              if (i == warmup) {
                stepsAtWarmup = PickerHistograms.steps(registry);
                insideAtWarmup = PickerHistograms.buckets(registry);
              }
              long nanos =
                  PickerProxy.exchange(
                      channel, PickerProxy.body(MODEL, prompts.get(i)), endpoints.get(i % 16));
              if (i >= warmup) {
                picker.recordNanos(nanos);
              }
              if (i % 2 == 0) {
                // A request without a body, picked by load at its headers: no body, no JSON, no
                // Redis; what is left is the gRPC round trip and the stream's own handling.
                long floor = PickerProxy.exchange(channel, null, endpoints.get(i % 16));
                if (i >= warmup) {
                  noBody.recordNanos(floor);
                }
              }
            }
            stepsMeasured = PickerHistograms.steps(registry);
            insideMeasured = PickerHistograms.buckets(registry);
            int chats = Math.max(100, requests / 10);
            for (int i = 0; i < chats + warmup / 10; i++) {
              long nanos =
                  PickerProxy.exchange(
                      channel,
                      PickerProxy.chatBody(MODEL, prompts.get(i)),
                      endpoints.get(0),
                      PickerProxy.CHAT);
              if (i >= warmup / 10) {
                chat.recordNanos(nanos);
              }
            }
          } finally {
            channel.shutdownNow();
          }
        }
        ObjectNode results = json.putObject("results");
        // What the goal names, measured at the picker: request headers in, pick out.
        double[] atBody =
            PickerHistograms.minus(insideMeasured.get("body"), insideAtWarmup.get("body"));
        double[] atHeaders =
            PickerHistograms.minus(insideMeasured.get("headers"), insideAtWarmup.get("headers"));
        results.put("picker_at_picker_p50_us", PickerHistograms.quantileMicros(atBody, 0.50));
        results.put("picker_at_picker_p99_us", PickerHistograms.quantileMicros(atBody, 0.99));
        results.put("picker_at_picker_samples", atBody[atBody.length - 1]);
        results.put(
            "picker_no_body_at_picker_p50_us", PickerHistograms.quantileMicros(atHeaders, 0.50));
        results.put(
            "picker_no_body_at_picker_p99_us", PickerHistograms.quantileMicros(atHeaders, 0.99));
        // The same requests as the proxy sees them: the round trip, the client's own work in it.
        picker.writeTo(results, "picker_added");
        chat.writeTo(results, "picker_added_chat_tokenized");
        noBody.writeTo(results, "picker_no_body_by_load");
        library.writeTo(results, "library_score_pick");
        results.put("picker_p50_over_library_p50", ratio(picker.micros(50), library.micros(50)));
        results.put(
            "picker_p50_minus_no_body_p50_over_library_p50",
            ratio(picker.micros(50) - noBody.micros(50), library.micros(50)));
        // Where the picker's time goes in the token-id requests measured (warm-up and the chat
        // requests left out): the means of its steps.
        ObjectNode steps = results.putObject("picker_steps_mean_us");
        for (Map.Entry<String, double[]> e : stepsMeasured.entrySet()) {
          double[] before = stepsAtWarmup.getOrDefault(e.getKey(), new double[2]);
          double n = e.getValue()[0] - before[0];
          if (n > 0) {
            steps.put(e.getKey(), Math.round((e.getValue()[1] - before[1]) / n / 100.0) / 10.0);
          }
        }
        results.put("goal_p50_us", 1000);
        results.put("goal_p99_us", 5000);
        results.put(
            "goal_met",
            PickerHistograms.quantileMicros(atBody, 0.50) <= 1000
                && PickerHistograms.quantileMicros(atBody, 0.99) <= 5000);
      } finally {
        engine.close();
      }
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException("the picker could not serve on loopback", e);
    }
    Reports.finish(json, start);
    return json;
  }

  private static double ratio(double a, double b) {
    return b == 0 ? 0 : Math.round(a / b * 100.0) / 100.0;
  }

  /** Prompts of 4 096 tokens: 32 shared system prompts of 1 024 tokens, then their own. */
  private static List<int[]> prompts(int n) {
    Random random = new Random(7);
    int[][] systems = new int[32][1024];
    for (int[] s : systems) {
      for (int i = 0; i < s.length; i++) {
        s[i] = random.nextInt(50_000);
      }
    }
    List<int[]> out = new ArrayList<>(n);
    for (int r = 0; r < n; r++) {
      int[] p = new int[PROMPT_TOKENS];
      System.arraycopy(systems[r % systems.length], 0, p, 0, 1024);
      for (int i = 1024; i < p.length; i++) {
        p[i] = random.nextInt(50_000);
      }
      out.add(p);
    }
    return out;
  }

  /**
   * Puts half the system prompts' blocks on each pod (as an ingester would: the index, opened
   * first, is created by this writer, whose scripts the router then runs).
   */
  private static void fill(PrefixIndex index, KvRouter router, List<int[]> prompts) {
    for (int pod = 0; pod < CANDIDATES; pod++) {
      StreamId stream = StreamId.of(MODEL, "pod-" + pod);
      Lease lease = index.acquireLease(stream, "bench", Duration.ofMinutes(10)).orElseThrow();
      List<KvEvent> stored = new ArrayList<>();
      for (int s = pod % 2; s < 32; s += 2) {
        long[] keys = router.blockKeys(MODEL, null, null, prompts.get(s));
        List<Long> system = new ArrayList<>();
        for (int b = 0; b < 1024 / BLOCK; b++) {
          system.add(keys[b]);
        }
        stored.add(BlockStored.of(system, null, List.of(), BLOCK));
      }
      index.apply(stream, KeyMode.ENGINE, 1, lease, KvEventBatch.of(0, stored, 0));
    }
  }
}
