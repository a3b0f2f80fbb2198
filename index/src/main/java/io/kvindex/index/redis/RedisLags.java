package io.kvindex.index.redis;

import static io.kvindex.index.redis.Bytes.number;
import static io.kvindex.index.redis.Bytes.text;

import io.kvindex.common.Check;
import io.kvindex.index.IngestLag;
import io.kvindex.index.StreamId;
import io.kvindex.redis.RedisOutcome;
import io.kvindex.redis.ScriptRunner;
import io.lettuce.core.ScriptOutputType;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The lag reports of streams' owners (lag.lua writes them, one hash per pod in its group; lags.lua
 * reads a pod's, with Redis's clock, which their times are in). Thread-safe.
 */
final class RedisLags {
  private final KeySchema keys;
  private final ScriptRunner writes;

  RedisLags(KeySchema keys, ScriptRunner writes) {
    this.keys = keys;
    this.writes = writes;
  }

  CompletableFuture<Boolean> report(StreamId stream, Duration lag, Duration ttl) {
    Check.notNull(stream, "stream");
    long lagMs = Check.atLeast(Check.notNull(lag, "lag").toMillis(), 0, "lag ms");
    long ms = Check.atLeastOneMilli(ttl, "ttl").toMillis();
    return new LagCall.Report(stream, lagMs, ms)
        .on(keys)
        .<Long>run(writes, ScriptOutputType.INTEGER)
        .thenApply(RedisOutcome::isDone);
  }

  CompletableFuture<List<IngestLag>> read(String model, String pod) {
    return new LagCall.Reports(Check.name(model, "model"), Check.name(pod, "pod"))
        .on(keys)
        .<List<Object>>run(writes, ScriptOutputType.MULTI)
        .thenApply(out -> parse(out.orElseThrow())); // a RedisUnavailableException when swallowed
  }

  /**
   * {seconds, microseconds, rank, "<ms>|<lag ms>", ...}: a report that does not parse is left out.
   */
  private static List<IngestLag> parse(List<Object> flat) {
    long now = number(flat.get(0)) * 1000 + number(flat.get(1)) / 1000;
    List<IngestLag> out = new ArrayList<>((flat.size() - 2) / 2);
    for (int i = 2; i + 1 < flat.size(); i += 2) {
      String report = text(flat.get(i + 1));
      int bar = report.indexOf('|');
      try {
        int rank = Integer.parseInt(text(flat.get(i)));
        long at = Long.parseLong(report.substring(0, bar));
        long lag = Long.parseLong(report.substring(bar + 1));
        out.add(
            new IngestLag(
                rank,
                Duration.ofMillis(Math.max(0, lag)),
                Duration.ofMillis(Math.max(0, now - at))));
      } catch (RuntimeException e) {
        // not a report this version writes: ignored, as if none stood
      }
    }
    return out;
  }
}
