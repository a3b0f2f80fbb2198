package io.kvindex.index.redis;

import static io.kvindex.index.redis.Bytes.text;

import io.kvindex.common.Check;
import io.kvindex.index.CacheLayout;
import io.kvindex.index.IndexConfig;
import io.kvindex.index.KeyCheckNote;
import io.kvindex.index.KeyMode;
import io.kvindex.redis.RedisOutcome;
import io.kvindex.redis.ScriptRunner;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
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
  private final RedisClusterAsyncCommands<byte[], byte[]> commands;
  private final Set<Noted> noted = ConcurrentHashMap.newKeySet();

  RedisNotes(
      IndexConfig config,
      KeySchema keys,
      ScriptRunner writes,
      RedisClusterAsyncCommands<byte[], byte[]> commands,
      IndexIdentity identity) {
    this.config = config;
    this.keys = keys;
    this.writes = writes;
    this.commands = commands;
    identity.addListener(
        (group, what) -> {
          if (what.equals("epoch")) {
            forget();
          }
        });
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
            HashFields.modeNote(mode, model),
            HashFields.segmentSlotsNote(config.segmentSlots()))
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
        HashFields.keysNote(modelKeys, model == null ? "" : model));
  }

  /** One HGETALL of the routers' notes; the latest note of each model wins. */
  CompletableFuture<Optional<Map<String, String>>> readerKeys() {
    return writes
        .calls()
        .<Map<byte[], byte[]>>call("notes", () -> commands.hgetall(keys.readerNotes()))
        .thenApply(
            outcome ->
                outcome.isDone()
                    ? Optional.of(latest(outcome.orElseThrow()))
                    : Optional.<Map<String, String>>empty())
        .toCompletableFuture();
  }

  private static Map<String, String> latest(Map<byte[], byte[]> notes) {
    Map<String, String> keysOf = new HashMap<>();
    Map<String, Long> at = new HashMap<>();
    notes.forEach(
        (field, value) -> {
          String[] note = HashFields.readKeysNote(field);
          long when = value == null ? 0 : Long.parseLong(text(value));
          if (note != null && when >= at.getOrDefault(note[1], Long.MIN_VALUE)) {
            keysOf.put(note[1], note[0]);
            at.put(note[1], when);
          }
        });
    return keysOf;
  }

  /** Notes the model's key check for the routers. */
  CompletableFuture<Boolean> keyCheck(String model, KeyCheckNote note) {
    return noteModelField(keys.keyChecks(), model, Check.notNull(note, "note").encode());
  }

  CompletableFuture<Optional<KeyCheckNote>> keyCheck(String model) {
    byte[] field = Check.name(model, "model").getBytes(StandardCharsets.UTF_8);
    return commands
        .hget(keys.keyChecks(), field)
        .toCompletableFuture()
        .thenApply(value -> Optional.ofNullable(value).map(KeyCheckNote::decode));
  }

  /** Records the model's cache layout, as its ingesters learn it. */
  CompletableFuture<Boolean> cacheLayout(String model, CacheLayout layout) {
    return noteModelField(
        keys.cacheLayouts(),
        model,
        Check.notNull(layout, "layout").encode().getBytes(StandardCharsets.US_ASCII));
  }

  CompletableFuture<Optional<CacheLayout>> cacheLayout(String model) {
    byte[] field = Check.name(model, "model").getBytes(StandardCharsets.UTF_8);
    return commands
        .hget(keys.cacheLayouts(), field)
        .toCompletableFuture()
        .thenApply(
            value ->
                Optional.ofNullable(value)
                    .map(v -> CacheLayout.decode(new String(v, StandardCharsets.US_ASCII))));
  }

  /** Sets the model's field of a per-model note hash ({@code keychecks}, {@code layouts}). */
  private CompletableFuture<Boolean> noteModelField(byte[] key, String model, byte[] value) {
    byte[] field = Check.name(model, "model").getBytes(StandardCharsets.UTF_8);
    return writes
        .calls()
        .<Boolean>call("note", () -> commands.hset(key, field, value))
        .thenApply(RedisOutcome::isDone)
        .toCompletableFuture();
  }

  /** Redis lost the index (a group's epoch changed): what this process noted is gone with it. */
  private void forget() {
    noted.clear();
  }

  private CompletableFuture<Boolean> note(byte[] key, int limit, byte[]... fields) {
    return new NoteCall(key, limit, List.of(fields))
        .on(keys)
        .<Long>run(writes, ScriptOutputType.INTEGER)
        .thenApply(RedisOutcome::isDone);
  }
}
