package io.kvindex.index.redis;

import static io.kvindex.index.Events.cleared;
import static io.kvindex.index.Events.hashes;
import static io.kvindex.index.Events.removed;
import static io.kvindex.index.Events.stored;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.hash.TokenKeys;
import io.kvindex.index.ApplyResult;
import io.kvindex.index.ApplyStatus;
import io.kvindex.index.Connectors;
import io.kvindex.index.Events;
import io.kvindex.index.InMemoryPrefixIndex;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.LookupRequest;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A batch applied in several calls, its writer stopped between two of them and the stream taken
 * over by another writer that packs the batch otherwise: with another chunk size, or with other
 * events for it (an eviction model's held-back stores and changes differ between owners). The new
 * writer skips nothing and fails on nothing, the former one is fenced when it goes on, and the
 * index ends as the in-memory model does.
 */
@UsesRedis
class BatchTakeoverTest {
  private static final String POD = "p";
  private static final StreamId ENGINE = StreamId.of("m", POD);
  private static final StreamId TOKEN = StreamId.of("tok", POD);
  private static final int BLOCK_SIZE = 4;

  private RedisConnector connector;
  private final String indexName = "takeover-" + UUID.randomUUID();
  private final List<PrefixIndex> opened = new ArrayList<>();

  @BeforeEach
  void connect(RedisStandalone server) {
    connector = Connectors.connect(server);
  }

  @AfterEach
  void close() {
    opened.forEach(PrefixIndex::close);
    connector.close();
  }

  /**
   * The same events, packed in chunks of another size by the new owner: it goes on from the block
   * the former owner stopped at (a smaller chunk took the chunk index past the new packing's end,
   * or into its middle).
   */
  @ParameterizedTest(name = "chunks of {0}, stopped after {1} calls, taken over with chunks of {2}")
  @CsvSource({"16, 1, 48", "16, 2, 48", "16, 3, 48", "48, 1, 16", "16, 1, 24", "24, 2, 16"})
  void apply_takenOverWithAnotherChunkSize_goesOnWhereTheFormerOwnerStopped(
      int chunkA, int callsDone, int chunkB) {
    List<KvEvent> history = List.of(stored(hashes(1, 40), null, null));
    List<KvEvent> batch = new ArrayList<>();
    for (long h = 21; h <= 40; h++) {
      batch.add(removed(List.of(h), null)); // one event per evicted block, as vLLM sends them
    }
    batch.add(stored(hashes(101, 40), null, null));

    Takeover t = takeOver(ENGINE, history, chunkA, callsDone, batch, chunkB, batch);

    assertThat(t.result().status()).isEqualTo(ApplyStatus.APPLIED);
    assertThat(t.result().blocksRemoved() + t.result().blocksStored())
        .as("no block written twice")
        .isLessThanOrEqualTo(60);
    assertSameIndex(ENGINE, t.index(), model(ENGINE, history, batch), universe(history, batch));
  }

  /**
   * Another owner's events for the same batch (it holds a store back that the former owner sent,
   * and restores other blocks): it applies its own from the first, so the engine's removal the
   * former owner had not reached yet is applied, and its events past the end of the former owner's
   * stay in the index.
   */
  @ParameterizedTest(name = "the new owner restores {0} blocks")
  @ValueSource(ints = {0, 20})
  void apply_takenOverWithOtherEvents_appliesItsOwnFromTheFirst(int restored) {
    List<KvEvent> history =
        List.of(stored(hashes(1, 10), null, null), stored(hashes(50, 3), null, null));
    BlockStored held = stored(hashes(11, 16), 10L, null);
    KvEvent evicted = removed(List.of(52L), null);
    List<KvEvent> former = List.of(held, evicted);
    List<KvEvent> mine = new ArrayList<>(List.of(evicted));
    if (restored > 0) {
      mine.add(stored(hashes(200, restored), null, null));
    }

    Takeover t = takeOver(ENGINE, history, 16, 1, former, 16, mine);

    assertThat(t.result().status()).isEqualTo(ApplyStatus.APPLIED);
    PrefixIndex model = model(ENGINE, history, List.of(held), mine);
    assertSameIndex(ENGINE, t.index(), model, universe(history, former, mine));
    assertThat(depth(t.index(), ENGINE, 52)).as("the engine's removal applied").isZero();
  }

  /**
   * An AllBlocksCleared inside the batch: resumed, the blocks after it land on the slot the clear
   * gave the stream; restarted with other events, the clear is applied again and retires what the
   * former owner stored after it.
   */
  @ParameterizedTest(name = "taken over with chunks of {0}, restoring {1} blocks")
  @CsvSource({"32, 0", "16, 3"})
  void apply_takenOverAfterAnAllBlocksCleared_endsAsTheModel(int chunkB, int restored) {
    List<KvEvent> history = List.of(stored(hashes(500, 8), null, null));
    List<KvEvent> batch =
        List.of(stored(hashes(1, 10), null, null), cleared(), stored(hashes(101, 30), null, null));
    List<KvEvent> mine = new ArrayList<>(batch);
    if (restored > 0) {
      mine.add(stored(hashes(300, restored), null, null));
    }

    Takeover t = takeOver(ENGINE, history, 16, 1, batch, chunkB, mine);

    assertThat(t.result().status()).isEqualTo(ApplyStatus.APPLIED);
    PrefixIndex model =
        restored == 0 ? model(ENGINE, history, batch) : model(ENGINE, history, batch, mine);
    assertSameIndex(ENGINE, t.index(), model, universe(history, batch, mine));
  }

  /**
   * Token keys: a store dropped for an unknown parent marks the record, and the rest of it is
   * dropped by the new owner too, whatever its chunk size; a store after it is applied in full.
   */
  @ParameterizedTest(name = "stopped after {0} calls")
  @ValueSource(ints = {1, 2})
  void apply_tokenKeysTakenOverWithAnotherChunkSize_dropsWhatTheWholeStoreWould(int callsDone) {
    Doc lost = new Doc(1_000, 12);
    Doc kept = new Doc(2_000, 20);
    List<KvEvent> history = List.of(kept.stored(0, 1));
    // The first store's parent is a block the index never saw.
    BlockStored orphan =
        new BlockStored(
            lost.hashes(0, 12),
            777L,
            lost.tokens(0, 12),
            BLOCK_SIZE,
            null,
            null,
            null,
            null,
            null,
            null,
            null);
    List<KvEvent> batch = List.of(orphan, kept.stored(1, 20));

    Takeover t = takeOver(TOKEN, history, 16, callsDone, batch, 24, batch);

    assertThat(t.result().status()).isEqualTo(ApplyStatus.APPLIED);
    PrefixIndex model = model(TOKEN, history, batch);
    assertSameTokenIndex(t.index(), model, List.of(lost, kept));
  }

  /**
   * Token keys, one writer: a store after a removal (the chunk's room then odd, in units of a
   * token-mode block's two) that runs past the chunk's end is cut where the call's plan cuts it,
   * and ends as the model.
   */
  @ParameterizedTest(name = "chunks of {0}")
  @ValueSource(ints = {16, 17, 24})
  void apply_tokenStoreAfterARemovalCutAtAChunksEnd_endsAsTheModel(int chunkBlocks) {
    Doc d = new Doc(1_000, 4);
    Doc e = new Doc(2_000, 30);
    List<KvEvent> history = List.of(d.stored(0, 4));
    List<KvEvent> batch = List.of(Events.removed(List.of(d.hash(3)), null), e.stored(0, 30));
    PrefixIndex index = open(chunkBlocks, () -> CompletableFuture.completedFuture(null));
    Lease lease = index.acquireLease(TOKEN, "a", Duration.ofMinutes(5)).orElseThrow();
    assertThat(index.apply(TOKEN, KeyMode.TOKEN, 0, lease, batch(history)).status())
        .isEqualTo(ApplyStatus.APPLIED);

    ApplyResult result = index.apply(TOKEN, KeyMode.TOKEN, 1, lease, batch(batch));

    assertThat(result.status()).isEqualTo(ApplyStatus.APPLIED);
    assertThat(result.blocksStored()).isEqualTo(30);
    assertThat(result.blocksRemoved()).isEqualTo(1);
    assertSameTokenIndex(index, model(TOKEN, history, batch), List.of(d, e));
  }

  /**
   * A run of batches whose first was left part applied (token keys: the run fits one call of the
   * new owner's chunk): the run is refused as one, and its batches applied one at a time, the first
   * going on where it was left. Applied again from its first block, its store under a parent that a
   * later removal of the same batch dropped from the stream's map would be lost.
   */
  @Test
  void apply_runStartingWithAPartAppliedBatch_refusedAsOneThenAppliedAlone() {
    Doc d = new Doc(1_000, 10);
    Doc f = new Doc(2_000, 10);
    Doc g = new Doc(3_000, 2);
    List<KvEvent> history = List.of(d.stored(0, 6));
    List<KvEvent> first =
        List.of(
            d.stored(6, 10),
            Events.removed(List.of(d.hash(5)), null), // the parent of the store before it
            f.stored(0, 10));
    List<KvEvent> second = List.of(g.stored(0, 2));
    List<KvEvent> run = new ArrayList<>(first);
    run.addAll(second);

    Takeover t = takeOver(TOKEN, history, 16, 1, first, 64, null);
    PrefixIndex b = t.index();
    ApplyResult asOne =
        b.applyAsync(TOKEN, KeyMode.TOKEN, 1, 2, t.lease(), batch(run), false).join();
    assertThat(asOne.status()).isEqualTo(ApplyStatus.PARTLY_APPLIED);
    assertThat(b.watermark(TOKEN)).hasValue(0);
    assertThat(b.apply(TOKEN, KeyMode.TOKEN, 1, t.lease(), batch(first)).status())
        .isEqualTo(ApplyStatus.APPLIED);
    assertThat(b.apply(TOKEN, KeyMode.TOKEN, 2, t.lease(), batch(second)).status())
        .isEqualTo(ApplyStatus.APPLIED);

    PrefixIndex model = model(TOKEN, history, first, second);
    assertSameTokenIndex(b, model, List.of(d, f, g));
    for (int i = 6; i < 10; i++) {
      assertThat(held(b, d, i)).as("block %d, stored under the block removed after it", i).isTrue();
    }
  }

  // ---------------------------------------------------------------- the takeover

  /** The new owner's index and lease, and its answer for the batch. */
  private record Takeover(PrefixIndex index, Lease lease, ApplyResult result) {}

  /**
   * Applies {@code history} as batch 0, then writer A (chunks of {@code chunkA}) applies {@code a}
   * as batch 1 and is stopped after {@code callsDone} of its calls; its lease is given up, writer B
   * (chunks of {@code chunkB}) takes it and applies {@code b} as batch 1 (unless null); then A goes
   * on and must be fenced.
   */
  private Takeover takeOver(
      StreamId s,
      List<KvEvent> history,
      int chunkA,
      int callsDone,
      List<KvEvent> a,
      int chunkB,
      List<KvEvent> b) {
    PausingWriter writerA = new PausingWriter(chunkA);
    PrefixIndex indexB = open(chunkB, () -> CompletableFuture.completedFuture(null));
    KeyMode mode = Events.mode(s);
    Lease leaseA = writerA.index.acquireLease(s, "a", Duration.ofMinutes(5)).orElseThrow();
    assertThat(writerA.index.apply(s, mode, 0, leaseA, batch(history)).status())
        .isEqualTo(ApplyStatus.APPLIED);

    writerA.pauseAfter(callsDone);
    CompletableFuture<ApplyResult> stopped = writerA.index.applyAsync(s, mode, 1, leaseA, batch(a));
    await(writerA.paused);
    assertThat(writerA.index.releaseLease(s, leaseA)).isTrue();
    Lease leaseB = indexB.acquireLease(s, "b", Duration.ofMinutes(5)).orElseThrow();

    ApplyResult result = b == null ? null : indexB.apply(s, mode, 1, leaseB, batch(b));

    writerA.release.complete(null);
    assertThat(await(stopped).status())
        .as("the former owner goes on: fenced")
        .isEqualTo(ApplyStatus.FENCED);
    return new Takeover(indexB, leaseB, result);
  }

  /** A writer that stops between two calls of a batch once told to, until released. */
  private final class PausingWriter {
    final PrefixIndex index;
    final CompletableFuture<Void> paused = new CompletableFuture<>();
    final CompletableFuture<Void> release = new CompletableFuture<>();
    private final AtomicInteger gaps = new AtomicInteger();
    private volatile int pauseAt = Integer.MAX_VALUE;

    PausingWriter(int chunkBlocks) {
      index = open(chunkBlocks, this::between);
    }

    void pauseAfter(int calls) {
      gaps.set(0);
      pauseAt = calls;
    }

    private CompletionStage<Void> between() {
      if (gaps.incrementAndGet() == pauseAt) {
        paused.complete(null);
        return release;
      }
      return CompletableFuture.completedFuture(null);
    }
  }

  private PrefixIndex open(
      int chunkBlocks, java.util.function.Supplier<CompletionStage<Void>> between) {
    PrefixIndex index =
        PrefixIndex.builder()
            .indexName(indexName)
            .applyChunkBlocks(chunkBlocks)
            .betweenChunks(between)
            .redis(connector)
            .lookupPolicy(RetryPolicy.defaults())
            .build();
    opened.add(index);
    return index;
  }

  private static <T> T await(CompletableFuture<T> future) {
    try {
      return future.get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError("the writer did not get there", e);
    }
  }

  private static KvEventBatch batch(List<KvEvent> events) {
    return KvEventBatch.of(0.0, events, null);
  }

  // ---------------------------------------------------------------- the model and the comparison

  /** The in-memory model after {@code history} and then each list of events, one batch each. */
  @SafeVarargs
  private static PrefixIndex model(StreamId s, List<KvEvent> history, List<KvEvent>... batches) {
    PrefixIndex model = InMemoryPrefixIndex.of(PrefixIndex.builder());
    Lease lease = model.acquireLease(s, "model", Duration.ofMinutes(5)).orElseThrow();
    model.apply(s, Events.mode(s), 0, lease, batch(history));
    for (int i = 0; i < batches.length; i++) {
      assertThat(model.apply(s, Events.mode(s), i + 1, lease, batch(batches[i])).status())
          .isEqualTo(ApplyStatus.APPLIED);
    }
    return model;
  }

  /** Every block hash the events name. */
  @SafeVarargs
  private static Set<Long> universe(List<KvEvent>... lists) {
    Set<Long> out = new LinkedHashSet<>();
    for (List<KvEvent> events : lists) {
      for (KvEvent e : events) {
        if (e instanceof BlockStored st) {
          out.addAll(st.blockHashes());
        } else if (e instanceof io.kvindex.event.BlockRemoved r) {
          out.addAll(r.blockHashes());
        }
      }
    }
    return out;
  }

  /** Each block alone, as the two indexes answer it. */
  private static void assertSameIndex(
      StreamId s, PrefixIndex index, PrefixIndex model, Set<Long> blocks) {
    for (long b : blocks) {
      assertThat(match(index, s, new long[] {b}))
          .as("block %d", b)
          .isEqualTo(match(model, s, new long[] {b}));
    }
  }

  /** Each document's token keys, alone and as chains from block 0. */
  private static void assertSameTokenIndex(PrefixIndex index, PrefixIndex model, List<Doc> docs) {
    for (Doc d : docs) {
      long[] keys = d.tokenKeys();
      for (int i = 0; i < keys.length; i++) {
        assertThat(match(index, TOKEN, new long[] {keys[i]}))
            .as("block %d of the document at %d", i, d.base)
            .isEqualTo(match(model, TOKEN, new long[] {keys[i]}));
      }
      assertThat(match(index, TOKEN, keys)).isEqualTo(match(model, TOKEN, keys));
    }
  }

  private static Object match(PrefixIndex index, StreamId s, long[] keys) {
    return index
        .lookup(LookupRequest.of(s.model(), Events.mode(s), keys, List.of(POD)))
        .pods()
        .get(POD);
  }

  private static int depth(PrefixIndex index, StreamId s, long block) {
    return index
        .lookup(LookupRequest.of(s.model(), Events.mode(s), new long[] {block}, List.of(POD)))
        .pods()
        .get(POD)
        .depth();
  }

  private static boolean held(PrefixIndex index, Doc d, int block) {
    long[] key = {d.tokenKeys()[block]};
    return index
            .lookup(LookupRequest.of(TOKEN.model(), KeyMode.TOKEN, key, List.of(POD)))
            .pods()
            .get(POD)
            .depth()
        == 1;
  }

  /**
   * A document of token-mode blocks: engine hashes {@code base + i}, tokens {@code base * 100 + j}.
   */
  private record Doc(long base, int blocks) {
    long hash(int i) {
      return base + i;
    }

    List<Long> hashes(int from, int to) {
      return hashes(base + from, to - from);
    }

    private static List<Long> hashes(long first, int n) {
      return Events.hashes(first, n);
    }

    List<Integer> tokens(int from, int to) {
      List<Integer> out = new ArrayList<>();
      for (int t = from * BLOCK_SIZE; t < to * BLOCK_SIZE; t++) {
        out.add((int) (base * 100 + t));
      }
      return out;
    }

    BlockStored stored(int from, int to) {
      return new BlockStored(
          hashes(from, to),
          from == 0 ? null : hash(from - 1),
          tokens(from, to),
          BLOCK_SIZE,
          null,
          null,
          null,
          null,
          null,
          null,
          null);
    }

    long[] tokenKeys() {
      int[] all = tokens(0, blocks).stream().mapToInt(Integer::intValue).toArray();
      return TokenKeys.chain(TokenKeys.root(TOKEN.model(), null), all, BLOCK_SIZE);
    }
  }
}
