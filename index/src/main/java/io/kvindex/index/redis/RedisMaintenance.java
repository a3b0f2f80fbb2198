package io.kvindex.index.redis;

import io.kvindex.common.Await;
import io.kvindex.common.Check;
import io.kvindex.index.GcResult;
import io.kvindex.index.IndexConfig;
import io.kvindex.index.PrefixIndexBuilder;
import io.kvindex.index.SweepResult;
import io.kvindex.redis.RedisOutcome;
import io.kvindex.redis.ScriptRunner;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Bounded background work on a group: garbage collection of purged streams' entries (gc.lua) and
 * the sweep that forgets departed pods (sweep.lua). Thread-safe.
 */
final class RedisMaintenance {
  private final IndexConfig config;
  private final KeySchema keys;
  private final ScriptRunner writes;
  private final RedisClusterAsyncCommands<byte[], byte[]> commands;

  RedisMaintenance(
      IndexConfig config,
      KeySchema keys,
      ScriptRunner writes,
      RedisClusterAsyncCommands<byte[], byte[]> commands) {
    this.config = config;
    this.keys = keys;
    this.writes = writes;
    this.commands = commands;
  }

  GcResult collectGarbage(int group, int budget) {
    RedisOutcome<List<Object>> outcome = Await.of(gcStep(group, budget));
    if (!outcome.isDone()) {
      return GcResult.unanswered();
    }
    List<Object> r = outcome.orElseThrow();
    return new GcResult(
        (Long) r.get(0) == 1,
        ((Long) r.get(1)).intValue(),
        ((Long) r.get(2)).intValue(),
        ((Long) r.get(3)).intValue(),
        ((Long) r.get(4)).intValue(),
        ((Long) r.get(5)).intValue());
  }

  private CompletableFuture<RedisOutcome<List<Object>>> gcStep(int group, int budget) {
    checkGroup(group);
    Check.between(budget, 1, PrefixIndexBuilder.MAX_GC_BUDGET, "budget");
    return new GcCall(group, budget).on(keys).run(writes, ScriptOutputType.MULTI);
  }

  SweepResult sweepDeparted(int group, int budget) {
    checkGroup(group);
    Check.between(budget, 1, PrefixIndexBuilder.MAX_GC_BUDGET, "budget");
    RedisOutcome<List<Object>> outcome =
        Await.of(
            new SweepCall(group, budget, config.departedRetention().toMillis())
                .on(keys)
                .<List<Object>>run(writes, ScriptOutputType.MULTI));
    if (!outcome.isDone()) {
      return new SweepResult(false, 0, 0, 0);
    }
    List<Object> r = outcome.orElseThrow();
    List<byte[]> tokenMaps = new ArrayList<>();
    for (int i = 3; i < r.size(); i++) {
      tokenMaps.add(keys.tokenMap(group, (byte[]) r.get(i)));
    }
    if (!tokenMaps.isEmpty()) {
      // Outside the script (the keys are only known from its reply): a map left behind by a
      // swallowed UNLINK is never read again, since its stream starts afresh.
      Await.of(
          writes
              .calls()
              .call("sweep", () -> commands.unlink(tokenMaps.toArray(byte[][]::new)))
              .toCompletableFuture());
    }
    return new SweepResult(
        (Long) r.get(0) == 1,
        ((Long) r.get(1)).intValue(),
        tokenMaps.size(),
        ((Long) r.get(2)).intValue());
  }

  void checkGroup(int group) {
    Check.between(group, 0, config.groups() - 1, "group");
  }
}
