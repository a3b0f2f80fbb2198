package io.kvindex.index.redis;

import static io.kvindex.index.Events.batch;
import static io.kvindex.index.Events.stored;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.Connectors;
import io.kvindex.index.Events;
import io.kvindex.index.IndexMeters;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.LookupRequest;
import io.kvindex.index.LookupResult;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;

/**
 * A quick in-test measurement of lookup latency against PING and of memory per (block, pod) entry,
 * printed to stdout. The default size is small so the suite stays fast; run the full size with
 *
 * <pre>
 * mvn -pl common -am test -Dtest=LookupMeasurementTest -Dsurefire.failIfNoSpecifiedTests=false \
 *     -Dkvindex.measure.docsPerPod=64
 * </pre>
 *
 * (64 pods x 64 documents x 256 blocks = 1M entries). It asserts the lookups' depths, not times.
 */
@UsesRedis
class LookupMeasurementTest {
  private static final int PODS = 64;
  private static final int DOC_BLOCKS = 256;
  private static final int DOCS = 256;
  private static final Duration TTL = PrefixIndex.MAX_SPECULATIVE_TTL;

  @Test
  void lookup_256Blocks64Candidates_timesAgainstPing(RedisStandalone server) throws Exception {
    int docsPerPod = Integer.getInteger("kvindex.measure.docsPerPod", 4);
    int lookups = Integer.getInteger("kvindex.measure.lookups", 2000);
    SimpleMeterRegistry meters = new SimpleMeterRegistry();
    try (RedisConnector connector = Connectors.connect(server, meters);
        PrefixIndex index =
            PrefixIndex.builder()
                .redis(connector)
                .lookupPolicy(RetryPolicy.defaults())
                .podTtl(Duration.ofHours(1))
                .build()) {
      long before = usedMemory(connector);
      Random random = new Random(7);
      List<String> pods = new ArrayList<>();
      int[] holdsDoc0 = new int[PODS];
      Lease t = null;
      for (int p = 0; p < PODS; p++) {
        String pod = "pod-" + p;
        pods.add(pod);
        StreamId s = StreamId.of("m", pod);
        t = index.acquireLease(s, "bench", Duration.ofHours(1)).orElseThrow();
        for (int i = 0; i < docsPerPod; i++) {
          int doc = i == 0 && p % 4 == 0 ? 0 : 1 + random.nextInt(DOCS - 1);
          int blocks = doc == 0 ? DOC_BLOCKS / 2 + p : DOC_BLOCKS;
          holdsDoc0[p] = doc == 0 ? blocks : holdsDoc0[p];
          index.apply(
              s, Events.mode(s), i, t, batch(stored(doc(doc).subList(0, blocks), null, null)));
        }
      }
      long entries = (long) PODS * docsPerPod * DOC_BLOCKS;
      long bytes = usedMemory(connector) - before;
      // The last pod also holds a chain whose first blocks' store was lost (its store names a
      // parent the index never saw): no lookup of doc 0 passes it, so they stay on segments.
      StreamId last = StreamId.of("m", pods.get(PODS - 1));
      List<Long> lost = doc(DOCS);
      index.apply(
          last,
          Events.mode(last),
          docsPerPod,
          t,
          batch(stored(lost.subList(8, 64), lost.get(7), null)));
      double blockReadsBefore = blockReads(meters);
      LookupRequest request = LookupRequest.of("m", KeyMode.ENGINE, doc(0), pods);
      LookupResult result = index.lookup(request);
      for (int p = 0; p < PODS; p++) {
        assertThat(result.pods().get(pods.get(p)).depth()).isEqualTo(holdsDoc0[p]);
      }
      long[] lookupNanos = new long[lookups];
      long[] pingNanos = new long[lookups];
      long[] hmgetNanos = new long[lookups];
      byte[][] sameFields = sameFields(pods, doc(0));
      byte[] blocks = new KeySchema("default", 1).blocks(0);
      for (int round = 0; round < 2; round++) {
        connector.commands().configResetstat().get();
        for (int i = 0; i < lookups; i++) {
          long start = System.nanoTime();
          index.lookup(request);
          lookupNanos[i] = System.nanoTime() - start;
          start = System.nanoTime();
          ping(connector);
          pingNanos[i] = System.nanoTime() - start;
          start = System.nanoTime();
          connector.commands().hmget(blocks, sameFields).get();
          hmgetNanos[i] = System.nanoTime() - start;
        }
      }
      Arrays.sort(lookupNanos);
      Arrays.sort(pingNanos);
      Arrays.sort(hmgetNanos);
      System.out.printf(
          "index: %d (block, pod) entries, %.1f bytes each (INFO used_memory delta)%n"
              + "lookup 256 blocks x 64 candidates: p50 %d us, p99 %d us; PING p50 %d us, p99 %d us;"
              + " ratio p50 %.2f; one plain HMGET of the same fields: p50 %d us%n",
          entries,
          (double) bytes / entries,
          lookupNanos[lookups / 2] / 1000,
          lookupNanos[lookups * 99 / 100] / 1000,
          pingNanos[lookups / 2] / 1000,
          pingNanos[lookups * 99 / 100] / 1000,
          (double) lookupNanos[lookups / 2] / pingNanos[lookups / 2],
          hmgetNanos[lookups / 2] / 1000);
      // Speculation on: 4 candidates have recorded routes for the first 64 blocks.
      for (int p = 1; p <= 4; p++) {
        index
            .speculateAsync(
                "m", KeyMode.ENGINE, pods.get(p), Events.array(doc(0).subList(0, 64)), 0, TTL)
            .join();
      }
      LookupResult speculative = index.lookup(request);
      for (int p = 1; p <= 4; p++) {
        assertThat(speculative.pods().get(pods.get(p)).depth())
            .isEqualTo(Math.max(64, holdsDoc0[p]));
      }
      long[] speculativeNanos = new long[lookups];
      for (int i = 0; i < lookups; i++) {
        long start = System.nanoTime();
        index.lookup(request);
        speculativeNanos[i] = System.nanoTime() - start;
      }
      Arrays.sort(speculativeNanos);
      double blockReads = blockReads(meters) - blockReadsBefore;
      System.out.printf(
          "lookups by block fields with one unlocated chain in the group: %.0f%n", blockReads);
      assertThat(blockReads).as("lookups that read block fields").isZero();
      System.out.printf(
          "with 4 candidates speculating: lookup p50 %d us, p99 %d us%n",
          speculativeNanos[lookups / 2] / 1000, speculativeNanos[lookups * 99 / 100] / 1000);
      System.out.println(
          connector
              .commands()
              .info("commandstats")
              .get()
              .lines()
              .filter(l -> l.matches("cmdstat_(evalsha|ping|hmget):.*"))
              .toList());
    }
  }

  /** The fields a lookup of {@code keys} over {@code pods} reads: holder records, then blocks. */
  private static byte[][] sameFields(List<String> pods, List<Long> keys) {
    List<byte[]> fields = new ArrayList<>();
    fields.add(KeySchema.SLOTS_GENERATION_FIELD);
    pods.forEach(p -> fields.add(HashFields.holderField(HashFields.podField("m", p))));
    byte[] prefix = HashFields.fieldPrefix(HashFields.scope(KeyMode.ENGINE, "m"), 0);
    keys.forEach(k -> fields.add(HashFields.blockField(prefix, k)));
    return fields.toArray(byte[][]::new);
  }

  private static List<Long> doc(int doc) {
    List<Long> keys = new ArrayList<>(DOC_BLOCKS);
    for (int i = 0; i < DOC_BLOCKS; i++) {
      keys.add(doc * 1_000_003L + i * 7919L + 1);
    }
    return keys;
  }

  private static void ping(RedisConnector connector) throws InterruptedException {
    try {
      connector.commands().ping().get();
    } catch (ExecutionException e) {
      throw new AssertionError(e);
    }
  }

  private static double blockReads(SimpleMeterRegistry meters) {
    return meters.get(IndexMeters.LOOKUP_BLOCK_READS).tag("index", "default").counter().count();
  }

  private static long usedMemory(RedisConnector connector) throws Exception {
    String info = connector.commands().info("memory").get();
    return info.lines()
        .filter(l -> l.startsWith("used_memory:"))
        .mapToLong(l -> Long.parseLong(l.substring("used_memory:".length()).trim()))
        .findFirst()
        .orElseThrow();
  }
}
