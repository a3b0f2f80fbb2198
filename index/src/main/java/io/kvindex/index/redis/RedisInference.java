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
            id,
            ascii(cachedBlocks))
        .toCompletableFuture()
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
    return writes
        .<Long>run(
            Scripts.INFER,
            ScriptOutputType.INTEGER,
            new byte[][] {keys.handover(stream)},
            ascii("handover"),
            value.array(),
            ascii(ms))
        .toCompletableFuture()
        .thenApply(RedisOutcome::isDone);
  }

  Optional<InferenceHandover> handover(StreamId stream) {
    Check.notNull(stream, "stream");
    byte[] value =
        Await.of(
                writes
                    .<byte[]>run(
                        Scripts.INFERRED,
                        ScriptOutputType.VALUE,
                        new byte[][] {keys.handover(stream)},
                        ascii("state"))
                    .toCompletableFuture())
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
