package io.kvindex.index.redis;

import static io.kvindex.index.redis.Bytes.ascii;
import static io.kvindex.index.redis.Bytes.decimal;
import static io.kvindex.index.redis.Bytes.text;

import io.kvindex.common.Await;
import io.kvindex.common.Check;
import io.kvindex.index.InferenceHandover;
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
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Inferred evictions in Redis (infer.lua, three keys per pod in its group and one per stream): the
 * mark that a pod's evictions are inferred, the pod's touches with their state (offsets and
 * readers' cursors), and what each stream's owner leaves for its next owner. Thread-safe.
 */
final class RedisInference {
  private final KeySchema keys;
  private final ScriptRunner writes;

  RedisInference(KeySchema keys, ScriptRunner writes) {
    this.keys = keys;
    this.writes = writes;
  }

  boolean mark(String model, String pod, int capacityBlocks, Duration ttl) {
    Check.name(model, "model");
    Check.name(pod, "pod");
    Check.atLeast(capacityBlocks, 1, "capacityBlocks");
    long ms = Check.atLeastOneMilli(ttl, "ttl").toMillis();
    return Await.of(
            new InferCall.Mark(model, pod, capacityBlocks, ms)
                .on(keys)
                .run(writes, ScriptOutputType.INTEGER))
        .isDone();
  }

  CompletableFuture<OptionalInt> state(String model, String pod) {
    return new InferCall.MarkState(Check.name(model, "model"), Check.name(pod, "pod"))
        .on(keys)
        .<byte[]>run(writes, ScriptOutputType.VALUE)
        .thenApply(
            out -> {
              byte[] value = out.orElseThrow(); // a RedisUnavailableException when swallowed
              return value == null ? OptionalInt.empty() : OptionalInt.of((int) decimal(value));
            });
  }

  CompletableFuture<Boolean> touch(
      String model,
      String pod,
      int rank,
      long[] blockKeys,
      int errorBlocks,
      int cachedBlocks,
      Duration ttl) {
    Check.name(model, "model");
    Check.name(pod, "pod");
    Check.atLeast(rank, -1, "rank");
    Check.notNull(blockKeys, "blockKeys");
    Check.atLeast(cachedBlocks, 0, "cachedBlocks");
    long ms = Check.atLeastOneMilli(ttl, "ttl").toMillis();
    int n = Math.min(blockKeys.length, PrefixIndex.MAX_TOUCH_BLOCKS);
    ByteBuffer packed = ByteBuffer.allocate(8 * n);
    for (int i = 0; i < n; i++) {
      packed.putLong(blockKeys[i]);
    }
    byte[] id = ByteBuffer.allocate(8).putLong(ThreadLocalRandom.current().nextLong()).array();
    return new InferCall.Touch(model, pod, rank, packed.array(), errorBlocks, ms, id, cachedBlocks)
        .on(keys)
        .<Long>run(writes, ScriptOutputType.INTEGER)
        .thenApply(RedisOutcome::isDone);
  }

  CompletableFuture<Boolean> handOver(StreamId stream, InferenceHandover handover, Duration ttl) {
    Check.notNull(stream, "stream");
    Check.notNull(handover, "handover");
    long ms = Check.atLeastOneMilli(ttl, "ttl").toMillis();
    byte[] size = ascii(handover.sizeBlocks() + "|");
    ByteBuffer value = ByteBuffer.allocate(size.length + 8 * handover.removals().length);
    value.put(size);
    for (long b : handover.removals()) {
      value.putLong(b);
    }
    return new InferCall.HandOver(stream, value.array(), ms)
        .on(keys)
        .<Long>run(writes, ScriptOutputType.INTEGER)
        .thenApply(RedisOutcome::isDone);
  }

  Optional<InferenceHandover> handover(StreamId stream) {
    Check.notNull(stream, "stream");
    byte[] value =
        Await.of(
                new InferCall.HandoverState(stream)
                    .on(keys)
                    .<byte[]>run(writes, ScriptOutputType.VALUE))
            .orElseThrow();
    if (value == null) {
      return Optional.empty();
    }
    int bar = 0;
    while (bar < value.length && value[bar] != '|') {
      bar++;
    }
    ByteBuffer removals = ByteBuffer.wrap(value, bar + 1, value.length - bar - 1);
    long[] blocks = new long[Math.min(removals.remaining() / 8, InferenceHandover.MAX_REMOVALS)];
    for (int i = 0; i < blocks.length; i++) {
      blocks[i] = removals.getLong();
    }
    int size = (int) decimal(Arrays.copyOf(value, bar));
    return Optional.of(new InferenceHandover(Math.max(1, size), blocks));
  }

  Touches read(StreamId stream, String cursor, int max) {
    Check.notNull(stream, "stream");
    Check.atLeast(max, 1, "max");
    if (cursor == null) {
      byte[] last =
          Await.of(new InferCall.Last(stream).on(keys).<byte[]>run(writes, ScriptOutputType.VALUE))
              .orElseThrow();
      return new Touches(List.of(), text(last), false);
    }
    List<Object> flat =
        Await.of(
                new InferCall.Read(stream, Check.notBlank(cursor, "cursor"), max)
                    .on(keys)
                    .<List<Object>>run(writes, ScriptOutputType.MULTI))
            .orElseThrow();
    List<Touch> out = new ArrayList<>(flat.size() / 6);
    String next = cursor;
    for (int i = 1; i + 5 < flat.size(); i += 6) {
      next = text(flat.get(i));
      ByteBuffer packed = ByteBuffer.wrap((byte[]) flat.get(i + 2));
      long[] blockKeys = new long[packed.remaining() / 8];
      for (int b = 0; b < blockKeys.length; b++) {
        blockKeys[b] = packed.getLong();
      }
      int r = (int) decimal((byte[]) flat.get(i + 1));
      int error = (int) decimal((byte[]) flat.get(i + 3));
      int cached = (int) Math.max(0, decimal((byte[]) flat.get(i + 4)));
      long at = decimal((byte[]) flat.get(i + 5));
      out.add(new Touch(r, blockKeys, error, cached, at));
    }
    return new Touches(out, next, (Long) flat.get(0) == 1L);
  }
}
