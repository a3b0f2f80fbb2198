package io.kvindex.chaos;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.demo.Stack;
import io.kvindex.index.Lookups;
import io.kvindex.index.StreamWrites;
import io.kvindex.index.redis.KeySchema;
import io.kvindex.index.redis.StoredValues;
import io.kvindex.router.http.ScoringServer;
import io.lettuce.core.api.sync.RedisCommands;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The worst {@code /score} the routers' default limits allow, over and over: {@value
 * ScoringServer#DEFAULT_MAX_BLOCK_KEYS} block keys and {@value
 * ScoringServer#DEFAULT_MAX_CANDIDATES} candidates (the pods and made-up ones given live records,
 * as that many engines would have), a speculative route of the prompt recorded first for every
 * candidate through the routers' own {@code /score}, and each call recording its pick as a route
 * again. Then rounds of {@code /score} calls naming pods that do not exist, each asking for its
 * pick to be recorded. Redis's {@code SLOWLOG} (every command over {@value #SLOW_MICROS} µs, reset
 * at the start) is read at the end and each entry put down to the routers' request path (lookups'
 * HMGETs and the scripts routers run) or to the rest of the stack; {@code INFO commandstats} gives
 * each command's mean time. Not thread-safe: one run.
 */
final class WorstScore {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** What SLOWLOG records: commands that ran longer than this in Redis. */
  static final int SLOW_MICROS = 1000;

  private static final int THREADS = 2;
  private static final int MADE_UP_ROUNDS = 4;
  private static final int MADE_UP_CALLS_PER_ROUND = 500;
  private static final Duration RECORD_TTL = Duration.ofSeconds(30);
  private static final Duration CANDIDATE_TTL = Duration.ofMinutes(2);

  /** Scripts a router runs on the request path (the others are ingesters' and tools'). */
  private static final Set<String> ROUTER_SCRIPTS =
      Set.of("lookup", "identity", "speculate", "pods", "time", "read", "note", "inferred", "lags");

  private final List<URI> routers;
  private final List<String> pods;
  private final StreamWrites index;
  private final RedisCommands<String, String> redis;
  private final String indexName;
  private final HttpClient http =
      HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(2))
          .build();
  private final AtomicLong next = new AtomicLong();
  private final AtomicBoolean loadPaused;

  /**
   * @param loadPaused set while the worst request's cost is measured alone and while the made-up
   *     pods' rounds run, so that the index does not grow under them
   */
  WorstScore(
      List<URI> routers,
      List<String> pods,
      StreamWrites index,
      RedisCommands<String, String> redis,
      String indexName,
      AtomicBoolean loadPaused) {
    this.loadPaused = loadPaused;
    this.routers = List.copyOf(routers);
    this.pods = List.copyOf(pods);
    this.index = index;
    this.redis = redis;
    this.indexName = indexName;
  }

  void run(Duration length, ObjectNode out) throws InterruptedException {
    redis.configSet("slowlog-log-slower-than", Integer.toString(SLOW_MICROS));
    redis.configSet("slowlog-max-len", "4096");
    redis.slowlogReset();
    Map<String, long[]> statsBefore = commandStats();
    try {
      List<String> candidates = new ArrayList<>(pods);
      for (int i = candidates.size(); i < ScoringServer.DEFAULT_MAX_CANDIDATES; i++) {
        candidates.add(String.format(Locale.ROOT, "candidate-%04d", i));
      }
      int live = 0;
      for (String c : candidates.subList(pods.size(), candidates.size())) {
        live += index.heartbeat(Stack.MODEL, c, CANDIDATE_TTL) ? 1 : 0;
      }
      long[] prompt = new long[ScoringServer.DEFAULT_MAX_BLOCK_KEYS];
      for (int i = 0; i < prompt.length; i++) {
        prompt[i] = 0x0BAD_5C0E_0000_0000L + i;
      }
      long[] routed = java.util.Arrays.copyOf(prompt, Lookups.MAX_ROUTE_BLOCKS);
      long routesAsked = 0;
      long routeCallsRefused = 0;
      for (String c : candidates) {
        HttpResponse<String> r = post(body(routed, List.of(c)));
        if (r.statusCode() == 200 && r.body().contains("\"pick\"")) {
          routesAsked++;
        } else {
          routeCallsRefused++;
        }
      }
      byte[] worst = body(prompt, candidates);
      AtomicLong calls = new AtomicLong();
      AtomicLong answered = new AtomicLong();
      AtomicLong slowestNanos = new AtomicLong();
      long until = System.nanoTime() + length.toNanos();
      List<Thread> threads = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        Thread thread =
            new Thread(
                () -> {
                  while (System.nanoTime() < until) {
                    long began = System.nanoTime();
                    try {
                      HttpResponse<String> r = post(worst);
                      calls.incrementAndGet();
                      if (r.statusCode() == 200) {
                        answered.incrementAndGet();
                      }
                    } catch (UncheckedIOException e) {
                      calls.incrementAndGet();
                    }
                    slowestNanos.accumulateAndGet(System.nanoTime() - began, Math::max);
                  }
                },
                "chaos-worst-score-" + t);
        thread.setDaemon(true);
        thread.start();
        threads.add(thread);
      }
      for (Thread t : threads) {
        t.join();
      }
      ObjectNode worstNode = out.putObject("worst_requests");
      worstNode.put("block_keys", prompt.length);
      worstNode.put("candidates", candidates.size());
      worstNode.put("made_up_candidates_given_live_records", live);
      worstNode.put("route_calls_answered_with_a_pick", routesAsked);
      worstNode.put("route_calls_not_recorded", routeCallsRefused);
      worstNode.put("calls", calls.get());
      worstNode.put("answered_200", answered.get());
      worstNode.put("slowest_call_ms", slowestNanos.get() / 1_000_000);
      String answer = post(worst).body();
      worstNode.put(
          "candidates_credited_by_a_route_in_an_answer",
          answer.split("\"speculative\":true", -1).length - 1);
      slowLog(out);
      loadPaused.set(true);
      TimeUnit.SECONDS.sleep(2); // the last batches applied
      alone(worst, out.putObject("worst_request_alone"));

      // Pods that do not exist, each call asking for its pick to be recorded.
      ArrayNode memory = out.putArray("redis_used_memory_after_made_up_rounds");
      long before = ChaosProbes.usedMemory(redis);
      memory.add(before);
      long madeUpCalls = 0;
      long madeUpAnswered = 0;
      long highest = before;
      for (int round = 0; round < MADE_UP_ROUNDS; round++) {
        for (int i = 0; i < MADE_UP_CALLS_PER_ROUND; i++) {
          int n = round * MADE_UP_CALLS_PER_ROUND + i;
          long[] keys = new long[64];
          for (int k = 0; k < keys.length; k++) {
            keys[k] = 0x0DD_0000_0000_0000L + n * 1_000L + k;
          }
          HttpResponse<String> r =
              post(body(keys, List.of("made-up-" + n + "-a", "made-up-" + n + "-b")));
          madeUpCalls++;
          madeUpAnswered += r.statusCode() == 200 ? 1 : 0;
        }
        long used = ChaosProbes.usedMemory(redis);
        memory.add(used);
        highest = Math.max(highest, used);
      }
      out.put("made_up_pod_calls", madeUpCalls);
      out.put("made_up_pod_calls_answered_200", madeUpAnswered);
      out.put("redis_used_memory_growth_over_made_up_rounds_bytes", highest - before);
      KeySchema keys = new KeySchema(indexName, 1);
      out.put(
          "speculative_route_fields",
          redis.hlen(new String(keys.speculativeRoutesKey(0), StandardCharsets.ISO_8859_1)));
    } finally {
      loadPaused.set(false);
      Map<String, long[]> statsAfter = commandStats();
      ObjectNode stats = out.putObject("commandstats_during_fault");
      statsAfter.forEach(
          (command, after) -> {
            long[] before = statsBefore.getOrDefault(command, new long[2]);
            long calls = after[0] - before[0];
            if (calls > 0) {
              ObjectNode c = stats.putObject(command);
              c.put("calls", calls);
              c.put("usec_per_call", Math.round((after[1] - before[1]) * 10.0 / calls) / 10.0);
            }
          });
      redis.configSet("slowlog-log-slower-than", "10000");
    }
  }

  /** Times of one worst request's own commands, one request at a time. */
  private static final int ALONE = 20;

  /**
   * The worst request's own commands, each request alone (the load paused, SLOWLOG recording every
   * command and reset before each): the lookup's HMGET of the blocks (over 32 arguments), its HMGET
   * of the routes, and the script recording the pick's route. Their median and longest Redis times
   * over {@value #ALONE} requests.
   */
  private void alone(byte[] worst, ObjectNode out) {
    Map<String, String> scripts = StoredValues.scriptNamesBySha();
    Map<String, List<Long>> times = new TreeMap<>();
    redis.configSet("slowlog-log-slower-than", "0");
    try {
      for (int n = 0; n < ALONE; n++) {
        redis.slowlogReset();
        post(worst);
        for (Object entry : redis.slowlogGet(4096)) {
          List<?> e = (List<?>) entry;
          long micros = ((Number) e.get(2)).longValue();
          List<?> args = (List<?>) e.get(3);
          String command = text(args.get(0)).toUpperCase(Locale.ROOT);
          String key = args.size() > 1 ? text(args.get(1)) : "";
          String what = null;
          if (command.equals("HMGET") && key.endsWith(":spec:routes")) {
            what = "routes_hmget";
          } else if (command.equals("HMGET")
              && text(args.get(args.size() - 1)).contains("more arguments")) {
            what = "blocks_hmget";
          } else if (command.startsWith("EVALSHA")
              && "speculate".equals(scripts.get(text(args.get(1))))) {
            what = "speculate_script";
          }
          if (what != null) {
            times.computeIfAbsent(what, k -> new ArrayList<>()).add(micros);
          }
        }
      }
    } finally {
      redis.configSet("slowlog-log-slower-than", Integer.toString(SLOW_MICROS));
    }
    out.put("requests", ALONE);
    times.forEach(
        (what, list) -> {
          List<Long> sorted = list.stream().sorted().toList();
          ObjectNode o = out.putObject(what);
          o.put("calls", sorted.size());
          o.put("median_micros", sorted.get(sorted.size() / 2));
          o.put("longest_micros", sorted.get(sorted.size() - 1));
        });
  }

  /**
   * SLOWLOG's entries, each put down to the routers' request path or not: counts, the longest of
   * each, and the request path's entries themselves.
   */
  private void slowLog(ObjectNode out) {
    Map<String, String> scripts = StoredValues.scriptNamesBySha();
    long routerPath = 0;
    long routerPathMax = 0;
    long others = 0;
    long othersMax = 0;
    Map<String, Long> othersByCommand = new TreeMap<>();
    ArrayNode routerEntries = JSON.createArrayNode();
    for (Object entry : redis.slowlogGet(4096)) {
      List<?> e = (List<?>) entry;
      long micros = ((Number) e.get(2)).longValue();
      List<?> args = (List<?>) e.get(3);
      String command = text(args.get(0)).toUpperCase(Locale.ROOT);
      String what = command;
      if (command.startsWith("EVALSHA") && args.size() > 1) {
        what = command + " " + scripts.getOrDefault(text(args.get(1)), "unknown script");
      }
      boolean router =
          command.equals("HMGET")
              || (command.startsWith("EVALSHA")
                  && ROUTER_SCRIPTS.contains(what.substring(what.indexOf(' ') + 1)));
      if (router) {
        routerPath++;
        routerPathMax = Math.max(routerPathMax, micros);
        if (routerEntries.size() < 20) {
          ObjectNode o = routerEntries.addObject();
          o.put("command", what);
          o.put("micros", micros);
          o.put("arguments", args.size() - 1);
        }
      } else {
        others++;
        othersMax = Math.max(othersMax, micros);
        othersByCommand.merge(what, 1L, Long::sum);
      }
    }
    out.put("slowlog_threshold_micros", SLOW_MICROS);
    out.put("slowlog_router_path_entries", routerPath);
    out.put("slowlog_router_path_longest_micros", routerPathMax);
    out.set("slowlog_router_path", routerEntries);
    out.put("slowlog_other_entries", others);
    out.put("slowlog_other_longest_micros", othersMax);
    out.set("slowlog_other_by_command", JSON.valueToTree(othersByCommand));
  }

  private static String text(Object arg) {
    return arg instanceof byte[] b
        ? new String(b, StandardCharsets.ISO_8859_1)
        : String.valueOf(arg);
  }

  /** INFO commandstats: per command, its calls and its microseconds in all. */
  private Map<String, long[]> commandStats() {
    Map<String, long[]> out = new TreeMap<>();
    for (String line : redis.info("commandstats").split("\r?\n")) {
      if (!line.startsWith("cmdstat_")) {
        continue;
      }
      String command = line.substring("cmdstat_".length(), line.indexOf(':'));
      long calls = 0;
      long usec = 0;
      for (String field : line.substring(line.indexOf(':') + 1).split(",")) {
        if (field.startsWith("calls=")) {
          calls = Long.parseLong(field.substring("calls=".length()));
        } else if (field.startsWith("usec=")) {
          usec = Long.parseLong(field.substring("usec=".length()));
        }
      }
      out.put(command, new long[] {calls, usec});
    }
    return out;
  }

  private HttpResponse<String> post(byte[] body) {
    URI router = routers.get((int) (next.getAndIncrement() % routers.size()));
    try {
      return http.send(
          HttpRequest.newBuilder(router.resolve("/score"))
              .timeout(Duration.ofSeconds(10))
              .header("Content-Type", "application/json")
              .POST(HttpRequest.BodyPublishers.ofByteArray(body))
              .build(),
          HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new UncheckedIOException("a /score call failed: " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UncheckedIOException(new IOException("interrupted", e));
    }
  }

  /** A {@code /score} of these block keys over these pods, each at load 0, its pick recorded. */
  private static byte[] body(long[] keys, List<String> candidates) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(keys.length * 21 + 64);
    try (JsonGenerator out = JSON.getFactory().createGenerator(bytes)) {
      out.writeStartObject();
      out.writeStringField("model", Stack.MODEL);
      out.writeArrayFieldStart("block_keys");
      for (long k : keys) {
        out.writeNumber(k);
      }
      out.writeEndArray();
      out.writeArrayFieldStart("pods");
      for (String c : candidates) {
        out.writeString(c);
      }
      out.writeEndArray();
      out.writeObjectFieldStart("load");
      for (String c : candidates) {
        out.writeNumberField(c, 0);
      }
      out.writeEndObject();
      out.writeNumberField("record_ttl_ms", RECORD_TTL.toMillis());
      out.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }
}
