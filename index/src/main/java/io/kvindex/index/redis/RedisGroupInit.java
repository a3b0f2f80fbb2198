package io.kvindex.index.redis;

import static io.kvindex.index.redis.Bytes.ascii;
import static io.kvindex.index.redis.Bytes.text;

import io.kvindex.common.Await;
import io.kvindex.index.IndexConfig;
import io.kvindex.index.IndexMismatchException;
import io.kvindex.index.IndexNotFoundException;
import io.kvindex.redis.LuaScript;
import io.kvindex.redis.RedisOutcome;
import io.kvindex.redis.RedisRealException;
import io.kvindex.redis.RedisUnavailableException;
import io.kvindex.redis.ScriptRunner;
import io.lettuce.core.KeyValue;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Each group's record of itself (init.lua, identity.lua): its group count, epoch and index format,
 * recorded on first use and checked on opening, and the node history serving it, checked now and
 * then by writers. Thread-safe.
 */
final class RedisGroupInit {
  private static final Logger log = LoggerFactory.getLogger(RedisGroupInit.class);

  private final IndexConfig config;
  private final KeySchema keys;
  private final ScriptRunner writes;
  private final RedisClusterAsyncCommands<byte[], byte[]> commands;
  private final IndexIdentity identity;

  RedisGroupInit(
      IndexConfig config,
      KeySchema keys,
      ScriptRunner writes,
      RedisClusterAsyncCommands<byte[], byte[]> commands,
      IndexIdentity identity) {
    this.config = config;
    this.keys = keys;
    this.writes = writes;
    this.commands = commands;
    this.identity = identity;
  }

  /**
   * Loads every script into Redis's script cache now, without waiting: compiling one takes about a
   * millisecond of Redis's one thread, which the first call of each would otherwise pay in the
   * middle of traffic (the first purge's and GC's calls were a clear's longest commands). Optional:
   * a call still loads its script on NOSCRIPT (a restarted or new node), so a refusal is logged and
   * the index works on.
   */
  void preloadScripts() {
    writes
        .preload(Scripts.all().toArray(new LuaScript[0]))
        .whenComplete(
            (outcome, error) -> {
              if (error != null || !outcome.isDone()) {
                log.info(
                    "index '{}': scripts not preloaded ({}); each compiles on its first call"
                        + " instead{}",
                    config.indexName(),
                    error != null ? error.getMessage() : outcome,
                    refused(error) ? ". To preload them, grant this Redis user +script|load" : "");
              }
            });
  }

  /** A refusal by the server's ACL, as opposed to a node that could not be reached. */
  private static boolean refused(Throwable error) {
    Throwable e = error instanceof CompletionException ? error.getCause() : error;
    return e instanceof RedisRealException real && "NOPERM".equals(real.code());
  }

  /** Checks every group's count and format, recording them on first use, and learns its epoch. */
  void checkGroups() {
    for (int g = 0; g < config.groups(); g++) {
      Optional<String> recorded = recorded(g);
      identity.epochIs(g, recorded.isPresent() ? recorded.get() : init(g));
    }
  }

  /**
   * The group's epoch, its group count checked, if init.lua would change nothing (meta records both
   * and the blocks hash has the epoch): then opening writes nothing, and a reader whose Redis user
   * may not write the index (a router's) opens it. Empty when the group needs init. Read under the
   * write policy, as init is: a cluster's node connections may still be coming up.
   */
  private Optional<String> recorded(int g) {
    CompletableFuture<RedisOutcome<List<KeyValue<byte[], byte[]>>>> meta =
        writes
            .calls()
            .<List<KeyValue<byte[], byte[]>>>call(
                "open",
                () ->
                    commands.hmget(keys.meta(g), ascii("groups"), ascii("epoch"), ascii("format")))
            .toCompletableFuture();
    CompletableFuture<RedisOutcome<byte[]>> copy =
        writes
            .calls()
            .<byte[]>call("open", () -> commands.hget(keys.blocks(g), KeySchema.EPOCH_FIELD))
            .toCompletableFuture();
    List<KeyValue<byte[], byte[]>> recorded = Await.of(meta).orElseThrow();
    byte[] blocksEpoch = Await.of(copy).orElseThrow();
    if (recorded.stream().anyMatch(field -> !field.hasValue()) || blocksEpoch == null) {
      return Optional.empty();
    }
    String epoch = checkedEpoch(recorded.stream().<Object>map(KeyValue::getValue).toList());
    return epoch.equals(text(blocksEpoch)) ? Optional.of(epoch) : Optional.empty();
  }

  /**
   * Records the group count, an epoch and the format if the group has none, and returns the epoch
   * it has.
   *
   * @throws IndexMismatchException if the index exists with another group count or format
   */
  private String init(int g) {
    try {
      return Await.of(initAsync(g));
    } catch (RedisUnavailableException e) {
      if (writes.loadsScripts() || !e.lastError().reason().equals("noscript")) {
        throw e;
      }
      throw new IndexNotFoundException(
          "index '"
              + config.indexName()
              + "' is not in this Redis (no ingester has created it yet, or Redis lost it), and"
              + " its scripts are not loaded; a router neither creates an index nor loads scripts:"
              + " start an ingester of the index on this Redis first (it does both), then this"
              + " router",
          e);
    }
  }

  /** init.lua: the group's epoch, recorded with its count and format if it has none. */
  CompletableFuture<String> initAsync(int g) {
    return new InitCall(g, config.groups(), IndexIdentity.newEpoch(), RedisPrefixIndex.FORMAT)
        .on(keys)
        .<List<Object>>run(writes, ScriptOutputType.MULTI)
        .thenApply(outcome -> checkedEpoch(outcome.orElseThrow()));
  }

  /** The epoch of an init reply or a meta read (groups, epoch, format), the rest checked. */
  private String checkedEpoch(List<Object> reply) {
    checkFormat(Integer.parseInt(text(reply.get(2))));
    int storedGroups = Integer.parseInt(text(reply.get(0)));
    if (storedGroups != config.groups()) {
      throw new IndexMismatchException(
          "index '"
              + config.indexName()
              + "' was created with "
              + storedGroups
              + " groups but this configuration says "
              + config.groups()
              + "; configure groups="
              + storedGroups
              + " or use another index name");
    }
    return text(reply.get(1));
  }

  private void checkFormat(int stored) {
    if (stored != RedisPrefixIndex.FORMAT) {
      throw new IndexMismatchException(
          "index '"
              + config.indexName()
              + "' has index format "
              + stored
              + " but this kvindex reads and writes format "
              + RedisPrefixIndex.FORMAT
              + ": processes of two formats cannot share an index. Run the release its other"
              + " ingesters and routers run, or give this release another index name (index-name)"
              + " and move ingesters, then routers, over to it (docs/operations.md, \"Rolling updates\")");
    }
  }

  /**
   * Whether any group's epoch or node changed. Under the write policy, not the routing path's: a
   * writer's maintenance call, which may wait out a busy moment of a loaded host (the routing
   * path's 5 ms gave up in the middle of ingesters' coordination rounds).
   */
  boolean checkIdentity() {
    boolean changed = false;
    for (int g = 0; g < config.groups(); g++) {
      IndexIdentity.Reply reply =
          IndexIdentity.Reply.of(
              Await.of(
                      new IdentityCall(g)
                          .on(keys)
                          .<List<Object>>run(writes, ScriptOutputType.MULTI))
                  .orElseThrow());
      changed |= identity.epochIs(g, reply.epoch().isEmpty() ? init(g) : reply.epoch());
      changed |= identity.nodeIs(g, reply.liveNode(), reply.trusted());
    }
    return changed;
  }
}
