package io.kvindex.index.redis;

import io.kvindex.index.IndexConfig;
import io.kvindex.index.KeyMode;
import io.kvindex.redis.RedisOutcome;
import io.kvindex.redis.ScriptRunner;
import io.lettuce.core.ScriptOutputType;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The notes a process leaves in the index for {@code kvindex inspect} (note.lua): a writer notes in
 * a group's meta each model's key mode, and the segment limit it applies with, when it first
 * applies a batch of the model there; a router notes each model's keys when it starts. Best effort
 * and never awaited by the write it accompanies: a note Redis could not take is tried again with
 * the next batch, one it refused (an ACL, say) is logged once and not tried again. Thread-safe.
 */
final class RedisNotes {
  private static final Logger log = LoggerFactory.getLogger(RedisNotes.class);

  /** (group, mode, model) noted kept at most; past it the set starts afresh. */
  private static final int NOTED_LIMIT = 4096;

  /** Fields the routers' notes key may hold before it is emptied and starts afresh. */
  static final int READER_NOTES_LIMIT = 1024;

  private record Noted(int group, KeyMode mode, String model) {}

  private final IndexConfig config;
  private final KeySchema keys;
  private final ScriptRunner writes;
  private final Set<Noted> noted = ConcurrentHashMap.newKeySet();

  RedisNotes(IndexConfig config, KeySchema keys, ScriptRunner writes) {
    this.config = config;
    this.keys = keys;
    this.writes = writes;
  }

  /** A writer applies {@code model}'s batches to {@code group} in {@code mode}: noted once. */
  void writer(int group, String model, KeyMode mode) {
    Noted note = new Noted(group, mode, model);
    if (noted.contains(note)) {
      return;
    }
    if (noted.size() >= NOTED_LIMIT) {
      noted.clear();
    }
    noted.add(note);
    note(
            keys.meta(group),
            0,
            KeySchema.modeNote(mode, model),
            KeySchema.segmentSlotsNote(config.segmentSlots()))
        .whenComplete(
            (done, failure) -> {
              if (failure != null) {
                log.warn(
                    "index '{}' group {}: cannot note model '{}' in key mode {} for inspection;"
                        + " inspect will not show it (give the ingester's Redis user the ACL line"
                        + " of docs/operations.md): {}",
                    config.indexName(),
                    group,
                    model,
                    mode,
                    failure.toString());
              } else if (!done) {
                noted.remove(note);
              }
            });
  }

  /** A reader keys {@code model}'s prompts (null: every model without keys of its own) so. */
  CompletableFuture<Boolean> reader(String model, String modelKeys) {
    return note(
        keys.readerNotes(),
        READER_NOTES_LIMIT,
        KeySchema.keysNote(modelKeys, model == null ? "" : model));
  }

  /** Redis lost the index: what this process noted is gone with it. */
  void forget() {
    noted.clear();
  }

  private CompletableFuture<Boolean> note(byte[] key, int limit, byte[]... fields) {
    return new NoteCall(key, limit, List.of(fields))
        .on(keys)
        .<Long>run(writes, ScriptOutputType.INTEGER)
        .thenApply(RedisOutcome::isDone);
  }
}
