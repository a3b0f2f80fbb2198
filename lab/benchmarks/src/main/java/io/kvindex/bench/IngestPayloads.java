package io.kvindex.bench;

import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEventBatch;
import io.kvindex.wire.KvEventEncoder;
import io.kvindex.wire.WireEra;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * The batches the ingest benchmarks publish: each one BlockStored of a fresh 64-block chain with
 * its 1 024 token ids, as a new prompt's prefill stores, decoded (for a client applying them
 * itself) or encoded in vLLM's map-era wire format (for a {@link LightPublisher}). Not thread-safe.
 */
final class IngestPayloads {
  static final int BLOCKS_PER_BATCH = 64;
  static final int BLOCK_SIZE = 16;

  private final KvEventEncoder encoder = KvEventEncoder.of(WireEra.MAP);
  private final Random random;

  IngestPayloads(long seed) {
    this.random = new Random(seed);
  }

  /** A new batch. */
  KvEventBatch batch() {
    List<Long> hashes = new ArrayList<>(BLOCKS_PER_BATCH);
    List<Integer> tokens = new ArrayList<>(BLOCKS_PER_BATCH * BLOCK_SIZE);
    for (int b = 0; b < BLOCKS_PER_BATCH; b++) {
      hashes.add(random.nextLong());
      for (int t = 0; t < BLOCK_SIZE; t++) {
        tokens.add(random.nextInt(150_000));
      }
    }
    return KvEventBatch.of(0.0, List.of(BlockStored.of(hashes, null, tokens, BLOCK_SIZE)), 0);
  }

  /** A new batch, encoded (its timestamp stamped when it is sent). */
  byte[] encoded() {
    return encoder.encode(batch());
  }

  /** {@code n} new encoded batches. */
  List<byte[]> encoded(int n) {
    List<byte[]> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(encoded());
    }
    return out;
  }
}
