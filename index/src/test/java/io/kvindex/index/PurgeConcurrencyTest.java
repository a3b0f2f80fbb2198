package io.kvindex.index;

import static io.kvindex.index.Events.batch;
import static io.kvindex.index.Events.hashes;
import static io.kvindex.index.Events.stored;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Lookups and applies racing purges of the same pod, against a real Redis. Lookups go through a
 * second instance, as a router's would: its cached pod records must never outlive a purge.
 */
@UsesRedis
class PurgeConcurrencyTest {
  private static final String MODEL = "m";
  private static final int CHAIN = 300;
  private RedisConnector connector;
  private PrefixIndex index;
  private PrefixIndex router;
  private ExecutorService executor;

  @BeforeEach
  void open(RedisStandalone server) {
    connector = Connectors.connect(server);
    index =
        PrefixIndex.builder()
            .redis(connector)
            .lookupPolicy(RetryPolicy.defaults())
            .gcBudget(20)
            .build();
    router = PrefixIndex.builder().redis(connector).lookupPolicy(RetryPolicy.defaults()).build();
    executor = Executors.newFixedThreadPool(2);
  }

  @AfterEach
  void close() throws InterruptedException {
    executor.shutdownNow();
    assertThat(executor.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
    router.close();
    index.close();
    connector.close();
  }

  private LookupRequest chain(long base) {
    return LookupRequest.of(MODEL, KeyMode.ENGINE, hashes(base, CHAIN), List.of("p", "q"));
  }

  @Test
  void lookup_racingPurges_seesWholeChunksOrNothing() throws Exception {
    StreamId p = StreamId.of(MODEL, "p");
    Lease t = index.acquireLease(p, "owner", Duration.ofMinutes(5)).orElseThrow();
    AtomicBoolean stop = new AtomicBoolean();
    Set<Integer> seen = ConcurrentHashMap.newKeySet();
    Future<?> reader =
        executor.submit(
            () -> {
              while (!stop.get()) {
                seen.add(router.lookup(chain(1)).pods().get("p").depth());
              }
            });
    Future<?> collector =
        executor.submit(
            () -> {
              while (!stop.get()) {
                index.collectGarbage(0, 20);
              }
            });
    long seq = 0;
    for (int round = 0; round < 40; round++) {
      assertThat(
              index
                  .apply(p, Events.mode(p), seq++, t, batch(stored(hashes(1, CHAIN), null, null)))
                  .status())
          .isEqualTo(ApplyStatus.APPLIED);
      assertThat(index.purge(p, t, PurgeMode.KEEP_WATERMARK)).isEqualTo(PurgeStatus.PURGED);
      assertThat(router.lookup(chain(1)).pods().get("p").depth())
          .as("a lookup after the purge returned")
          .isZero();
    }
    stop.set(true);
    reader.get(10, TimeUnit.SECONDS);
    collector.get(10, TimeUnit.SECONDS);
    // A 300-block batch applies in chunks: a lookup may see whole chunks of it before the last
    // one lands, but never part of a purge.
    int chunk = PrefixIndexBuilder.DEFAULT_APPLY_CHUNK_BLOCKS;
    assertThat(seen)
        .as("depths seen while racing")
        .allSatisfy(d -> assertThat(d == CHAIN || d % chunk == 0).as("depth %d", d).isTrue())
        .contains(0);
  }

  @Test
  void apply_racingPurge_neverResurrectsOldEntries() throws Exception {
    StreamId p = StreamId.of(MODEL, "p");
    Lease t = index.acquireLease(p, "owner", Duration.ofMinutes(5)).orElseThrow();
    for (int round = 0; round < 20; round++) {
      index.purge(p, t, PurgeMode.RESET_WATERMARK);
      IndexFixtures.collectAllGarbage(index, 20);
      long old = 1_000_000L * (round + 1);
      assertThat(
              index
                  .apply(p, Events.mode(p), 0, t, batch(stored(hashes(old, CHAIN), null, null)))
                  .status())
          .isEqualTo(ApplyStatus.APPLIED);
      Future<?> writer =
          executor.submit(
              () -> {
                for (int i = 1; i <= 30; i++) {
                  index.apply(
                      p,
                      Events.mode(p),
                      i,
                      t,
                      batch(stored(hashes(old + 500_000 + i, 1), null, null)));
                }
              });
      Future<PurgeStatus> purge =
          executor.submit(() -> index.purge(p, t, PurgeMode.KEEP_WATERMARK));
      assertThat(purge.get(10, TimeUnit.SECONDS)).isEqualTo(PurgeStatus.PURGED);
      writer.get(10, TimeUnit.SECONDS);
      assertThat(router.lookup(chain(old)).pods().get("p").depth())
          .as("blocks stored before the purge, round %d", round)
          .isZero();
      IndexFixtures.collectAllGarbage(index, 20);
      assertThat(router.lookup(chain(old)).pods().get("p").depth()).isZero();
    }
  }
}
