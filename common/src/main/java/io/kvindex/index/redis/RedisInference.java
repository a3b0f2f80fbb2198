package io.kvindex.index.redis;

import static io.kvindex.index.redis.Bytes.ascii;
import static io.kvindex.index.redis.Bytes.decimal;
import static io.kvindex.index.redis.Bytes.text;

import io.kvindex.common.Await;
import io.kvindex.common.Check;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.index.Touch;
import io.kvindex.index.Touches;
import io.kvindex.redis.RedisOutcome;
import io.kvindex.redis.ScriptRunner;
import io.lettuce.core.ScriptOutputType;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Inferred evictions in Redis (infer.lua, three keys per pod in its group): the mark that a pod's
 * evictions are inferred, and the pod's touches with their state (offsets and readers' cursors).
 * Thread-safe.
 */
final class RedisInference {
  private final KeySchema keys;
  private final ScriptRunner writes;

  RedisInference(KeySchema keys, ScriptRunner writes) {
    this.keys = keys;
    this.writes = writes;
  }

  boolean mark(String model, String pod, int capacityBlocks, Duration ttl) {
    byte[] key = keys.inferred(Check.name(model, "model"), Check.name(pod, "pod"));
    Check.atLeast(capacityBlocks, 1, "capacityBlocks");
    long ms = Check.atLeastOneMilli(ttl, "ttl").toMillis();
    return Await.of(
            writes
                .<Long>run(
                    Scripts.INFER,
                    ScriptOutputType.INTEGER,
                    new byte[][] {key},
                    ascii("mark"),
                    ascii(capacityBlocks),
                    ascii(ms))
                .toCompletableFuture())
        .isDone();
  }

  CompletableFuture<OptionalInt> state(String model, String pod) {
    byte[] key = keys.inferred(Check.name(model, "model"), Check.name(pod, "pod"));
    return writes
        .<byte[]>run(Scripts.INFERRED, ScriptOutputType.VALUE, new byte[][] {key}, ascii("state"))
        .toCompletableFuture()
        .thenApply(
            out -> {
              byte[] value = out.orElseThrow(); // a RedisUnavailableException when swallowed
              return value == null ? OptionalInt.empty() : OptionalInt.of((int) decimal(value));
            });
  }

  CompletableFuture<Boolean> touch(
      String model, String pod, int rank, long[] blockKeys, int errorBlocks, Duration ttl) {
    Check.name(model, "model");
    Check.name(pod, "pod");
    Check.atLeast(rank, -1, "rank");
    Check.notNull(blockKeys, "blockKeys");
    long ms = Check.atLeastOneMilli(ttl, "ttl").toMillis();
    int n = Math.min(blockKeys.length, PrefixIndex.MAX_TOUCH_BLOCKS);
    ByteBuffer packed = ByteBuffer.allocate(8 * n);
    for (int i = 0; i < n; i++) {
      packed.putLong(blockKeys[i]);
    }
    byte[] id = ByteBuffer.allocate(8).putLong(ThreadLocalRandom.current().nextLong()).array();
    return writes
        .<Long>run(
            Scripts.INFER,
            ScriptOutputType.INTEGER,
            new byte[][] {keys.touches(model, pod), keys.touchState(model, pod)},
            ascii("touch"),
            ascii(rank),
            packed.array(),
            ascii(errorBlocks),
            ascii(PrefixIndex.MAX_TOUCHES),
            ascii(ms),
            ascii(PrefixIndex.MAX_TOUCH_BYTES),
            ascii(PrefixIndex.TOUCH_OVERHEAD_BYTES),
            id)
        .toCompletableFuture()
        .thenApply(RedisOutcome::isDone);
  }

  Touches read(StreamId stream, String cursor, int max) {
    Check.notNull(stream, "stream");
    Check.atLeast(max, 1, "max");
    byte[][] key = {
      keys.touches(stream.model(), stream.pod()), keys.touchState(stream.model(), stream.pod())
    };
    byte[] rank = ascii(stream.dpRank());
    byte[] readerTtl = ascii(PrefixIndex.TOUCH_READER_TTL.toMillis());
    if (cursor == null) {
      byte[] last =
          Await.of(
                  writes
                      .<byte[]>run(
                          Scripts.INFER,
                          ScriptOutputType.VALUE,
                          key,
                          ascii("last"),
                          rank,
                          readerTtl)
                      .toCompletableFuture())
              .orElseThrow();
      return new Touches(List.of(), text(last), false);
    }
    List<Object> flat =
        Await.of(
                writes
                    .<List<Object>>run(
                        Scripts.INFER,
                        ScriptOutputType.MULTI,
                        key,
                        ascii("read"),
                        rank,
                        ascii(Check.notBlank(cursor, "cursor")),
                        ascii(max),
                        ascii(PrefixIndex.MAX_TOUCH_READ_BYTES),
                        readerTtl)
                    .toCompletableFuture())
            .orElseThrow();
    List<Touch> out = new ArrayList<>(flat.size() / 4);
    String next = cursor;
    for (int i = 1; i + 3 < flat.size(); i += 4) {
      next = text(flat.get(i));
      ByteBuffer packed = ByteBuffer.wrap((byte[]) flat.get(i + 2));
      long[] blockKeys = new long[packed.remaining() / 8];
      for (int b = 0; b < blockKeys.length; b++) {
        blockKeys[b] = packed.getLong();
      }
      int r = (int) decimal((byte[]) flat.get(i + 1));
      out.add(new Touch(r, blockKeys, (int) decimal((byte[]) flat.get(i + 3))));
    }
    return new Touches(out, next, (Long) flat.get(0) == 1L);
  }
}
