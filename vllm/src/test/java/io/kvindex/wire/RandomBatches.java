package io.kvindex.wire;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.ExtraKey;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/** Seeded random batches covering every field and value range the records allow. */
final class RandomBatches {
  private static final String[] MEDIA = {
    null, "GPU", "CPU", "cpu", "STORAGE", "FS", "OBJ", "x".repeat(40)
  };
  private static final String[] KINDS = {null, "full_attention", "sliding_window", "mamba"};
  private static final String[] LOCALITIES = {null, "LOCAL", "REMOTE", "remote", "NEARBY"};

  private final Random random;

  RandomBatches(long seed) {
    this.random = new Random(seed);
  }

  KvEventBatch batch() {
    int n = random.nextInt(6);
    List<KvEvent> events = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      events.add(event());
    }
    double ts = random.nextBoolean() ? 1.7e9 + random.nextDouble() : random.nextDouble();
    return KvEventBatch.of(ts, events, random.nextInt(4) == 0 ? null : random.nextInt(8));
  }

  KvEvent event() {
    return switch (random.nextInt(5)) {
      case 0 -> AllBlocksCleared.INSTANCE;
      case 1 -> new BlockRemoved(hashes(), pick(MEDIA), maybe(random.nextInt(3)));
      default -> stored();
    };
  }

  private BlockStored stored() {
    List<Long> hashes = hashes();
    int blockSize = random.nextInt(4) == 0 ? 0 : 1 << random.nextInt(8);
    List<Integer> tokens = new ArrayList<>();
    int tokenCount = random.nextInt(3) == 0 ? random.nextInt(300) : random.nextInt(20);
    for (int i = 0; i < tokenCount; i++) {
      tokens.add(random.nextBoolean() ? random.nextInt(200_000) : random.nextInt());
    }
    return new BlockStored(
        hashes,
        random.nextBoolean() ? null : hash(),
        tokens,
        blockSize,
        maybe(random.nextInt(1000) - 10),
        pick(MEDIA),
        random.nextBoolean() ? null : "lora-" + random.nextInt(100),
        random.nextBoolean() ? null : extraKeys(hashes.size()),
        maybe(random.nextInt(4)),
        pick(KINDS),
        maybe(random.nextInt(5000)),
        pick(LOCALITIES),
        random.nextBoolean() ? null : "tier-" + random.nextInt(4),
        random.nextBoolean() ? null : "session-" + random.nextInt(1000));
  }

  private List<List<ExtraKey>> extraKeys(int n) {
    List<List<ExtraKey>> perBlock = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      List<ExtraKey> keys = new ArrayList<>();
      int k = random.nextInt(4);
      for (int j = 0; j < k; j++) {
        switch (random.nextInt(3)) {
          case 0 -> keys.add(new ExtraKey.Text("salt-" + random.nextInt(10)));
          case 1 ->
              keys.add(new ExtraKey.Multimodal("mm" + random.nextInt(), random.nextInt(64) - 32));
          default -> {
            byte[] digest = new byte[32];
            random.nextBytes(digest);
            keys.add(new ExtraKey.Digest(digest));
          }
        }
      }
      perBlock.add(keys);
    }
    return perBlock;
  }

  private List<Long> hashes() {
    int n = random.nextInt(4) == 0 ? random.nextInt(40) : random.nextInt(4);
    List<Long> hashes = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      hashes.add(hash());
    }
    return hashes;
  }

  /** Full 64-bit values, half of them 2^63 and above, some small ones in every int width. */
  long hash() {
    return switch (random.nextInt(4)) {
      case 0 -> random.nextLong() >>> (random.nextInt(64));
      case 1 -> random.nextLong() | Long.MIN_VALUE;
      default -> random.nextLong();
    };
  }

  private <T> T pick(T[] values) {
    return values[random.nextInt(values.length)];
  }

  private Integer maybe(int value) {
    return random.nextBoolean() ? null : value;
  }
}
