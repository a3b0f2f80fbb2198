package io.kvindex.bench;

import io.lettuce.core.RedisFuture;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Plain-Redis reference figures measured on the same server in the same run as the index: PING
 * round trips, plain HMGETs, pipelined SADD, and a naive purge. Not thread-safe.
 */
final class Baselines {
  /** A naive purge: read the whole set, then remove its members one by one, in one script. */
  static final String NAIVE_PURGE =
      "local members = redis.call('SMEMBERS', KEYS[1])\n"
          + "for i = 1, #members do redis.call('SREM', KEYS[1], members[i]) end\n"
          + "return #members\n";

  private static final int PIPELINE_WINDOW = 1000;

  private Baselines() {}

  /** One PING round trip, in nanoseconds. */
  static long pingOnce(StatefulRedisConnection<byte[], byte[]> connection) {
    long start = System.nanoTime();
    await(connection.async().ping());
    return System.nanoTime() - start;
  }

  /**
   * Plain HMGETs of random existing fields of one hash: {@code sets} field sets of {@code fields}
   * each, drawn once with HRANDFIELD, read in turn. What a lookup costs without any decoding.
   */
  static FieldReads randomFieldReads(
      StatefulRedisConnection<byte[], byte[]> connection, String key, int sets, int fields) {
    byte[] hash = key.getBytes(StandardCharsets.UTF_8);
    List<byte[][]> drawn = new ArrayList<>(sets);
    for (int i = 0; i < sets; i++) {
      drawn.add(await(connection.async().hrandfield(hash, fields)).toArray(byte[][]::new));
    }
    return new FieldReads(hash, drawn);
  }

  /** Field sets of one hash to read with HMGET, one per call, in turn. */
  record FieldReads(byte[] key, List<byte[][]> sets) {
    /** One HMGET of set {@code i} (modulo the count), in nanoseconds. */
    long readOnce(StatefulRedisConnection<byte[], byte[]> connection, int i) {
      byte[][] fields = sets.get(i % sets.size());
      long start = System.nanoTime();
      await(connection.async().hmget(key, fields));
      return System.nanoTime() - start;
    }
  }

  /**
   * Pipelined single-member SADDs, {@value #PIPELINE_WINDOW} per flush, one per block key, each
   * adding a small pod number, as an index entry would: returns members added per second.
   */
  static double saddPipelinedPerSecond(
      StatefulRedisConnection<byte[], byte[]> connection, String keyPrefix, int members) {
    RedisAsyncCommands<byte[], byte[]> async = connection.async();
    connection.setAutoFlushCommands(false);
    try {
      long start = System.nanoTime();
      List<RedisFuture<Long>> window = new ArrayList<>(PIPELINE_WINDOW);
      for (int i = 0; i < members; i++) {
        window.add(async.sadd(blockKey(keyPrefix, i / 8), podMember(i % 8)));
        if (window.size() == PIPELINE_WINDOW || i == members - 1) {
          connection.flushCommands();
          window.forEach(Baselines::await);
          window.clear();
        }
      }
      return members / ((System.nanoTime() - start) / 1e9);
    } finally {
      connection.setAutoFlushCommands(true);
    }
  }

  /** Fills one set with {@code members} 8-byte members (multi-member SADDs, pipelined). */
  static void fillSet(StatefulRedisConnection<byte[], byte[]> connection, String key, int members) {
    RedisAsyncCommands<byte[], byte[]> async = connection.async();
    byte[] setKey = key.getBytes(StandardCharsets.UTF_8);
    List<RedisFuture<Long>> pending = new ArrayList<>();
    int chunk = 1000;
    for (int from = 0; from < members; from += chunk) {
      int to = Math.min(members, from + chunk);
      byte[][] values = new byte[to - from][];
      for (int i = from; i < to; i++) {
        values[i - from] = ByteBuffer.allocate(8).putLong(0x9E3779B97F4A7C15L * (i + 1)).array();
      }
      pending.add(async.sadd(setKey, values));
      if (pending.size() == 64) {
        pending.forEach(Baselines::await);
        pending.clear();
      }
    }
    pending.forEach(Baselines::await);
  }

  /** Runs {@link #NAIVE_PURGE} on {@code key}; returns the members it removed. */
  static long naivePurge(StatefulRedisConnection<byte[], byte[]> connection, String key) {
    Long removed =
        await(
            connection
                .async()
                .<Long>eval(
                    NAIVE_PURGE.getBytes(StandardCharsets.UTF_8),
                    ScriptOutputType.INTEGER,
                    key.getBytes(StandardCharsets.UTF_8)));
    return removed;
  }

  private static byte[] blockKey(String prefix, long block) {
    return (prefix + Long.toHexString(0x9E3779B97F4A7C15L * (block + 1)))
        .getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] podMember(int pod) {
    return Integer.toString(pod).getBytes(StandardCharsets.UTF_8);
  }

  static <T> T await(RedisFuture<T> future) {
    try {
      return future.get(120, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for Redis", e);
    } catch (ExecutionException e) {
      throw new IllegalStateException("Redis command failed: " + e.getCause(), e.getCause());
    } catch (TimeoutException e) {
      throw new IllegalStateException("Redis did not answer within 120 s", e);
    }
  }
}
