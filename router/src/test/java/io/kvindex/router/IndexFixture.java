package io.kvindex.router;

import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.ApplyStatus;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.PurgeMode;
import io.kvindex.index.PurgeStatus;
import io.kvindex.index.StreamId;
import io.kvindex.redis.RedisConnector;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The write side of a test: an index on its own connection that stores blocks for pods the way an
 * ingester does (leased, sequenced batches). Not thread-safe.
 */
final class IndexFixture implements AutoCloseable {
  private final RedisConnector connector;
  private final PrefixIndex index;
  private final KeyMode mode;
  private final Map<StreamId, Held> streams = new HashMap<>();

  IndexFixture(String redisUri, String indexName, String model, KeyMode mode) {
    this(redisUri, indexName, model, mode, 1);
  }

  IndexFixture(String redisUri, String indexName, String model, KeyMode mode, int groups) {
    this.mode = mode;
    connector = RedisConnector.connect(redisUri);
    index = PrefixIndex.builder().indexName(indexName).groups(groups).redis(connector).build();
  }

  /** Stores {@code keys} (a chain from block 0) on {@code pod}'s rank 0 in {@code medium}. */
  void store(String model, String pod, long[] keys, String medium) {
    List<Long> hashes = new ArrayList<>();
    for (long key : keys) {
      hashes.add(key);
    }
    BlockStored stored =
        new BlockStored(hashes, null, List.of(), 16, null, medium, null, null, null, null, null);
    apply(StreamId.of(model, pod), List.of(stored));
  }

  /**
   * Stores the first {@code blocks} full blocks of {@code tokens} on {@code pod} the way an engine
   * reports them (arbitrary engine hashes plus the token ids), for token-key mode, where the index
   * derives the keys from the token ids itself.
   */
  void storeTokens(String model, String pod, String lora, int[] tokens, int blocks, int blockSize) {
    List<Long> hashes = new ArrayList<>();
    List<Integer> ids = new ArrayList<>();
    for (int b = 0; b < blocks; b++) {
      hashes.add(0x5EED0000L + b);
      for (int t = b * blockSize; t < (b + 1) * blockSize; t++) {
        ids.add(tokens[t]);
      }
    }
    BlockStored stored =
        new BlockStored(hashes, null, ids, blockSize, null, null, lora, null, null, null, null);
    apply(StreamId.of(model, pod), List.of(stored));
  }

  void apply(StreamId stream, List<KvEvent> events) {
    Held held = lease(stream);
    ApplyStatus status =
        index.apply(stream, mode, held.seq++, held.lease, KvEventBatch.of(0.0, events, 0)).status();
    if (status != ApplyStatus.APPLIED) {
      throw new IllegalStateException("apply returned " + status);
    }
  }

  void purge(String model, String pod) {
    StreamId stream = StreamId.of(model, pod);
    PurgeStatus status = index.purge(stream, lease(stream).lease, PurgeMode.KEEP_WATERMARK);
    if (status != PurgeStatus.PURGED) {
      throw new IllegalStateException("purge returned " + status);
    }
  }

  /** A stream's lease and its next sequence number. */
  private static final class Held {
    final Lease lease;
    long seq = 1;

    Held(Lease lease) {
      this.lease = lease;
    }
  }

  private Held lease(StreamId stream) {
    return streams.computeIfAbsent(
        stream,
        s -> new Held(index.acquireLease(s, "test-owner", Duration.ofMinutes(5)).orElseThrow()));
  }

  PrefixIndex index() {
    return index;
  }

  @Override
  public void close() {
    index.close();
    connector.close();
  }
}
