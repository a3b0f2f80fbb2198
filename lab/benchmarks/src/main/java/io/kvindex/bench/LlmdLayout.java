package io.kvindex.bench;

import io.kvindex.common.Check;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The Redis layout of llm-d's KV-cache indexer, written here from its published design so that the
 * same driver can measure it beside kvindex:
 *
 * <ul>
 *   <li>one Redis hash per block key, named by the key as a decimal unsigned 64-bit integer with no
 *       namespace; its fields are JSON pod entries ({@code {"PodIdentifier":..,"DeviceTier":..}})
 *       with empty values;
 *   <li>a sorted set {@code engine:<hash>} per engine key, whose members are the block keys it maps
 *       to (here the engine key is the block key, as the router hashes what vLLM hashes);
 *   <li>store: one non-transactional pipeline of ZADD and HSET per batch;
 *   <li>lookup: one pipeline of HKEYS, one per block key; the answer stops at the first key with no
 *       candidate pod;
 *   <li>remove: ZRANGE of the engine key, pipelined HDEL, then a small script that deletes the
 *       hashes left empty (and the engine key once all are);
 *   <li>clear(pod): SCAN of the whole keyspace (COUNT 1024), HKEYS of every block hash, HDEL of the
 *       pod's fields, and the same script on each hash it changed. The published code issues each
 *       key's HKEYS as its own round trip; here they are pipelined per SCAN page, which shortens
 *       the clear's wall time and leaves Redis the same commands to run.
 * </ul>
 *
 * Thread-safe: writes and clears from one thread at a time; lookups from any number of threads,
 * each on a pooled connection of its own (a pipeline needs a connection to itself).
 */
final class LlmdLayout implements ComparedIndex {
  static final int SCAN_COUNT = 1024;
  private static final byte[] EMPTY = new byte[0];
  private static final byte[] ENGINE_PREFIX = "engine:".getBytes(StandardCharsets.US_ASCII);

  /** Deletes every empty hash among KEYS[2..]; deletes KEYS[1] too once all of them are empty. */
  static final String PRUNE =
      "local empty = true\n"
          + "for i = 2, #KEYS do\n"
          + "  if redis.call('HLEN', KEYS[i]) == 0 then redis.call('DEL', KEYS[i])"
          + " else empty = false end\n"
          + "end\n"
          + "if empty and KEYS[1] ~= '' then redis.call('DEL', KEYS[1]) end\n"
          + "return empty and 1 or 0\n";

  private final RedisClient client;
  private final StatefulRedisConnection<byte[], byte[]> writer;
  private final ConcurrentLinkedQueue<StatefulRedisConnection<byte[], byte[]>> readers =
      new ConcurrentLinkedQueue<>();
  private final List<StatefulRedisConnection<byte[], byte[]>> opened = new ArrayList<>();
  private final ConcurrentHashMap<String, byte[]> fields = new ConcurrentHashMap<>();
  private final String prune;

  /** Connects to database {@code database} of the standalone server at {@code uri}. */
  LlmdLayout(String uri, int database) {
    RedisURI redisUri = RedisURI.create(Check.notBlank(uri, "uri"));
    redisUri.setDatabase(Check.between(database, 0, 15, "database"));
    redisUri.setTimeout(Duration.ofSeconds(120));
    this.client = RedisClient.create(redisUri);
    this.writer = client.connect(ByteArrayCodec.INSTANCE);
    writer.setAutoFlushCommands(false);
    RedisFuture<String> sha = writer.async().scriptLoad(PRUNE.getBytes(StandardCharsets.UTF_8));
    writer.flushCommands();
    this.prune = Baselines.await(sha);
  }

  @Override
  public String name() {
    return "llmd_layout";
  }

  @Override
  public long store(List<ApplyPump.Feed> feeds) {
    List<ApplyPump.Feed> active = new ArrayList<>(feeds);
    List<RedisFuture<?>> round = new ArrayList<>();
    long blocks = 0;
    while (!active.isEmpty()) {
      for (Iterator<ApplyPump.Feed> it = active.iterator(); it.hasNext(); ) {
        ApplyPump.Feed feed = it.next();
        if (feed.batches().hasNext()) {
          blocks += queueStore(feed.stream().pod(), feed.batches().next(), round);
        } else {
          it.remove();
        }
      }
      flushAndAwait(writer, round);
    }
    return blocks;
  }

  /** Queues one batch's ZADD + HSET per stored block on the writer; returns the blocks. */
  private int queueStore(String pod, KvEventBatch batch, List<RedisFuture<?>> pending) {
    RedisAsyncCommands<byte[], byte[]> async = writer.async();
    int blocks = 0;
    for (KvEvent event : batch.events()) {
      if (event instanceof BlockStored stored) {
        byte[] field = podField(pod, stored.tier());
        for (long hash : stored.blockHashes()) {
          byte[] key = blockKey(hash);
          pending.add(async.zadd(engineKey(hash), 0.0, key));
          pending.add(async.hset(key, field, EMPTY));
          blocks++;
        }
      }
    }
    return blocks;
  }

  @Override
  public int[] depths(long[] keys, List<String> candidates) {
    List<List<byte[]>> replies = hkeys(keys);
    CandidateSet wanted = new CandidateSet(candidates);
    int[] depths = new int[candidates.size()];
    for (int i = 0; i < replies.size(); i++) {
      boolean any = false;
      for (byte[] field : replies.get(i)) {
        int c = wanted.indexOf(field);
        if (c >= 0) {
          any = true;
          if (depths[c] == i) {
            depths[c] = i + 1;
          }
        }
      }
      if (!any) {
        break; // the prefix chain breaks here, as the published lookup stops
      }
    }
    return depths;
  }

  /**
   * The pods listed under each key, in key order, up to the first key with none of {@code
   * candidates}: the published lookup's answer.
   */
  List<List<String>> lookup(long[] keys, List<String> candidates) {
    CandidateSet wanted = new CandidateSet(candidates);
    List<List<String>> answer = new ArrayList<>();
    for (List<byte[]> reply : hkeys(keys)) {
      List<String> pods = new ArrayList<>();
      for (byte[] field : reply) {
        int c = wanted.indexOf(field);
        if (c >= 0) {
          pods.add(candidates.get(c));
        }
      }
      if (pods.isEmpty()) {
        break;
      }
      answer.add(pods);
    }
    return answer;
  }

  /** One pipeline of HKEYS, every reply awaited (as a pipeline's exec reads them all). */
  private List<List<byte[]>> hkeys(long[] keys) {
    StatefulRedisConnection<byte[], byte[]> connection = borrow();
    try {
      List<RedisFuture<List<byte[]>>> futures = new ArrayList<>(keys.length);
      for (long key : keys) {
        futures.add(connection.async().hkeys(blockKey(key)));
      }
      connection.flushCommands();
      List<List<byte[]>> replies = new ArrayList<>(keys.length);
      for (RedisFuture<List<byte[]>> future : futures) {
        replies.add(Baselines.await(future));
      }
      return replies;
    } finally {
      readers.add(connection);
    }
  }

  /** Removes one pod entry of an engine key's block keys, as a BlockRemoved does. */
  void remove(String pod, String tier, long engineKey) {
    byte[] engine = engineKey(engineKey);
    RedisFuture<List<byte[]>> range = writer.async().zrange(engine, 0, -1);
    writer.flushCommands();
    List<byte[]> blockKeys = Baselines.await(range);
    if (blockKeys.isEmpty()) {
      return;
    }
    List<RedisFuture<?>> pending = new ArrayList<>();
    byte[] field = podField(pod, tier);
    for (byte[] key : blockKeys) {
      pending.add(writer.async().hdel(key, field));
    }
    flushAndAwait(writer, pending);
    byte[][] scriptKeys = new byte[blockKeys.size() + 1][];
    scriptKeys[0] = engine;
    for (int i = 0; i < blockKeys.size(); i++) {
      scriptKeys[i + 1] = blockKeys.get(i);
    }
    pending.add(writer.async().evalsha(prune, ScriptOutputType.INTEGER, scriptKeys));
    flushAndAwait(writer, pending);
  }

  @Override
  public void clear(String pod, Runnable step) {
    byte[] identifier = pod.getBytes(StandardCharsets.UTF_8);
    ScanArgs args = ScanArgs.Builder.matches("*").limit(SCAN_COUNT);
    ScanCursor cursor = ScanCursor.INITIAL;
    do {
      RedisFuture<KeyScanCursor<byte[]>> scan = writer.async().scan(cursor, args);
      writer.flushCommands();
      KeyScanCursor<byte[]> page = Baselines.await(scan);
      clearPage(page.getKeys(), identifier);
      step.run();
      cursor = page;
    } while (!cursor.isFinished());
  }

  /** HKEYS of every block hash of one SCAN page, then HDEL and the prune script where needed. */
  private void clearPage(List<byte[]> keys, byte[] identifier) {
    List<byte[]> hashes = new ArrayList<>();
    List<RedisFuture<List<byte[]>>> listed = new ArrayList<>();
    for (byte[] key : keys) {
      if (!startsWith(key, ENGINE_PREFIX)) {
        hashes.add(key);
        listed.add(writer.async().hkeys(key));
      }
    }
    writer.flushCommands();
    List<RedisFuture<?>> pending = new ArrayList<>();
    for (int i = 0; i < hashes.size(); i++) {
      List<byte[]> stale = new ArrayList<>();
      for (byte[] field : Baselines.await(listed.get(i))) {
        if (PodField.identifierEquals(field, identifier)) {
          stale.add(field);
        }
      }
      if (!stale.isEmpty()) {
        pending.add(writer.async().hdel(hashes.get(i), stale.toArray(new byte[0][])));
        pending.add(writer.async().evalsha(prune, ScriptOutputType.INTEGER, EMPTY, hashes.get(i)));
      }
    }
    flushAndAwait(writer, pending);
  }

  private byte[] podField(String pod, String tier) {
    String lowerTier = tier.toLowerCase(Locale.ROOT);
    return fields.computeIfAbsent(pod + '\n' + lowerTier, k -> PodField.encode(pod, lowerTier));
  }

  static byte[] blockKey(long hash) {
    return Long.toUnsignedString(hash).getBytes(StandardCharsets.US_ASCII);
  }

  static byte[] engineKey(long hash) {
    return ("engine:" + Long.toUnsignedString(hash)).getBytes(StandardCharsets.US_ASCII);
  }

  private static boolean startsWith(byte[] key, byte[] prefix) {
    if (key.length < prefix.length) {
      return false;
    }
    for (int i = 0; i < prefix.length; i++) {
      if (key[i] != prefix[i]) {
        return false;
      }
    }
    return true;
  }

  private StatefulRedisConnection<byte[], byte[]> borrow() {
    StatefulRedisConnection<byte[], byte[]> connection = readers.poll();
    if (connection != null) {
      return connection;
    }
    connection = client.connect(ByteArrayCodec.INSTANCE);
    connection.setAutoFlushCommands(false);
    synchronized (opened) {
      opened.add(connection);
    }
    return connection;
  }

  private static void flushAndAwait(
      StatefulRedisConnection<byte[], byte[]> connection, List<RedisFuture<?>> pending) {
    connection.flushCommands();
    for (RedisFuture<?> future : pending) {
      Baselines.await(future);
    }
    pending.clear();
  }

  @Override
  public String describe() {
    return "one hash per block key (decimal uint64, no namespace), JSON pod-entry fields with empty"
        + " values, a ZSET engine:<hash> per engine key; store = one pipeline of ZADD + HSET per"
        + " batch, all streams' batches of a round in one flush on one connection; lookup = one"
        + " pipeline of HKEYS per block key on a connection of the calling thread's own, stopping"
        + " at the first key with no candidate; clear(pod) = SCAN MATCH * COUNT "
        + SCAN_COUNT
        + " of its database, HKEYS of every block hash (pipelined per page), HDEL of the pod's"
        + " fields and a prune script per changed hash; Redis database of its own";
  }

  @Override
  public void close() {
    synchronized (opened) {
      opened.forEach(StatefulRedisConnection::close);
    }
    writer.close();
    client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
  }

  /** The candidates of one lookup, found by the pod identifier inside a field's JSON. */
  private static final class CandidateSet {
    private final Map<ByteBuffer, Integer> index = new HashMap<>();

    CandidateSet(List<String> candidates) {
      for (int c = 0; c < candidates.size(); c++) {
        index.putIfAbsent(ByteBuffer.wrap(candidates.get(c).getBytes(StandardCharsets.UTF_8)), c);
      }
    }

    int indexOf(byte[] field) {
      ByteBuffer identifier = PodField.identifier(field);
      Integer c = identifier == null ? null : index.get(identifier);
      return c == null ? -1 : c;
    }
  }
}
