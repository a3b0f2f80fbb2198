package io.kvindex.index.redis;

import static io.kvindex.index.redis.Bytes.text;

import io.kvindex.common.Await;
import io.kvindex.common.Check;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.ResyncStatus;
import io.kvindex.index.StreamId;
import io.kvindex.redis.RedisOutcome;
import io.kvindex.redis.ScriptRunner;
import io.lettuce.core.ScriptOutputType;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Resync requests (resync.lua, one key per pod in its group): made by routers, taken once per rank
 * by the owner of each of the pod's streams, and by each stream at most once per spacing (the time
 * of its last one is kept in the group's activity hash, which routers cannot write). Thread-safe.
 */
final class RedisResyncs {
  private final KeySchema keys;
  private final ScriptRunner writes;

  /** The id of each stream's take that got no answer, reused by its next take. */
  private final Map<StreamId, String> unanswered = new ConcurrentHashMap<>();

  RedisResyncs(KeySchema keys, ScriptRunner writes) {
    this.keys = keys;
    this.writes = writes;
  }

  CompletableFuture<ResyncStatus> request(
      String model, String pod, String note, Duration interval) {
    Check.name(model, "model");
    Check.name(pod, "pod");
    long ms = Check.atLeastOneMilli(interval, "interval").toMillis();
    return new ResyncCall.Request(model, pod, checked(note), ms)
        .on(keys)
        .<Long>run(writes, ScriptOutputType.INTEGER)
        .thenApply(
            out -> {
              if (!out.isDone()) {
                return ResyncStatus.UNAVAILABLE;
              }
              return out.orElseThrow() == 1 ? ResyncStatus.REQUESTED : ResyncStatus.STANDING;
            });
  }

  /**
   * Takes the stream's request, unless the stream took one less than {@code spacing} ago. Each take
   * is one call, named by a random id that its retries share, so a retry after a lost reply gets
   * the note the first attempt took; a take that never got an answer keeps its id for the stream's
   * next take, which then gets that note too.
   */
  Optional<String> take(StreamId stream, Duration spacing) {
    Check.notNull(stream, "stream");
    long ms = Check.atLeastOneMilli(spacing, "spacing").toMillis();
    String call = unanswered.computeIfAbsent(stream, s -> UUID.randomUUID().toString());
    RedisOutcome<byte[]> out =
        Await.of(
            new ResyncCall.Take(stream, call, ms).on(keys).run(writes, ScriptOutputType.VALUE));
    byte[] note = out.orElseThrow(); // a swallowed call keeps its id for the next take
    unanswered.remove(stream, call);
    return note == null ? Optional.empty() : Optional.of(text(note));
  }

  private static String checked(String note) {
    Check.notNull(note, "note");
    Check.between(note.length(), 0, PrefixIndex.MAX_RESYNC_NOTE, "note length");
    return note;
  }
}
