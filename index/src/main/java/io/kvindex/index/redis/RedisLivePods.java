package io.kvindex.index.redis;

import io.kvindex.common.Await;
import io.kvindex.common.Check;
import io.kvindex.index.PodLiveness;
import io.kvindex.redis.RedisOutcome;
import io.kvindex.redis.ScriptRunner;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Which pods are live: a pod's heartbeat, and for routers a model's live pods (pods.lua, read at
 * most once a second per model) and given pods' liveness deadlines beside the group's clock.
 * Thread-safe.
 */
final class RedisLivePods {
  /** How long a model's live pods, read for a lookup without candidates, are reused. */
  static final Duration LIVE_PODS_REUSE = Duration.ofSeconds(1);

  /** Models whose live pods are kept at most; past it the kept lists are dropped. */
  static final int LIVE_PODS_MODELS = 1024;

  /** A model's live pods as read, and until when they are reused. */
  private record LivePods(CompletableFuture<Optional<List<String>>> pods, long untilNanos) {}

  private final Map<String, LivePods> livePods = new ConcurrentHashMap<>();
  private final KeySchema keys;
  private final ScriptRunner writes;
  private final ScriptRunner reads;
  private final RedisClusterAsyncCommands<byte[], byte[]> commands;
  private final ServerClock clock;

  RedisLivePods(
      KeySchema keys,
      ScriptRunner writes,
      ScriptRunner reads,
      RedisClusterAsyncCommands<byte[], byte[]> commands,
      ServerClock clock) {
    this.keys = keys;
    this.writes = writes;
    this.reads = reads;
    this.commands = commands;
    this.clock = clock;
  }

  /** Moves the pod's liveness deadline to now + {@code ttl} (heartbeat.lua). */
  boolean heartbeat(String model, String pod, Duration ttl) {
    Check.name(model, "model");
    Check.name(pod, "pod");
    long ttlMs = Check.atLeastOneMilli(ttl, "ttl").toMillis();
    return Await.of(
            new HeartbeatCall(model, pod, ttlMs).on(keys).run(writes, ScriptOutputType.INTEGER))
        .isDone();
  }

  /** One HGET of the pods hash per pod, beside the group's clock estimate. */
  CompletableFuture<Optional<List<PodLiveness>>> liveness(String model, List<String> pods) {
    Check.name(model, "model");
    List<CompletableFuture<PodLiveness>> each = new ArrayList<>(pods.size());
    for (String pod : pods) {
      int g = keys.groupOf(model, Check.name(pod, "pod"));
      CompletableFuture<byte[]> record =
          commands.hget(keys.pods(g), HashFields.podField(model, pod)).toCompletableFuture();
      each.add(
          record.thenCombine(
              clock.nowMillis(g),
              (rec, now) -> new PodLiveness(pod, PodRecord.deadlineOrNull(rec), now)));
    }
    return CompletableFuture.allOf(each.toArray(CompletableFuture[]::new))
        .thenApply(done -> Optional.of(each.stream().map(CompletableFuture::join).toList()))
        .exceptionally(failure -> Optional.empty());
  }

  CompletableFuture<Optional<List<String>>> livePods(String model) {
    Check.name(model, "model");
    long now = System.nanoTime();
    LivePods kept = livePods.get(model);
    if (kept != null
        && kept.untilNanos() - now > 0
        && (!kept.pods().isDone() || kept.pods().getNow(Optional.empty()).isPresent())) {
      return kept.pods();
    }
    if (livePods.size() >= LIVE_PODS_MODELS) {
      livePods.clear();
    }
    CompletableFuture<Optional<List<String>>> read = readLivePods(model);
    livePods.put(model, new LivePods(read, now + LIVE_PODS_REUSE.toNanos()));
    return read;
  }

  /** Reads every group's pods hash (one HGETALL each): at most once a second per model. */
  private CompletableFuture<Optional<List<String>>> readLivePods(String model) {
    int prefixLength = HashFields.modelPrefix(model).length;
    List<CompletableFuture<RedisOutcome<List<byte[]>>>> parts = new ArrayList<>();
    for (int g = 0; g < keys.groups(); g++) {
      parts.add(new PodsCall(g, model).on(keys).run(reads, ScriptOutputType.MULTI));
    }
    return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new))
        .thenApply(
            x -> {
              List<String> pods = new ArrayList<>();
              for (CompletableFuture<RedisOutcome<List<byte[]>>> part : parts) {
                RedisOutcome<List<byte[]>> outcome = part.join();
                if (!outcome.isDone()) {
                  return Optional.empty();
                }
                outcome.orElseThrow().forEach(f -> pods.add(HashFields.podOf(f, prefixLength)));
              }
              return Optional.of(pods);
            });
  }
}
