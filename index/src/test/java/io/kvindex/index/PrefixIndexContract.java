package io.kvindex.index;

import static io.kvindex.index.Events.batch;
import static io.kvindex.index.Events.cleared;
import static io.kvindex.index.Events.hashes;
import static io.kvindex.index.Events.removed;
import static io.kvindex.index.Events.stored;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.hash.TokenKeys;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The semantics every {@link PrefixIndex} shares, run against the in-memory model, a standalone
 * Redis and a Redis Cluster. Subclasses open the index under test.
 */
public abstract class PrefixIndexContract {
  static final String MODEL = "m";
  static final String TOKEN_MODEL = "tok";
  static final String OWNER = "ingester-1";
  static final Duration LONG = Duration.ofMinutes(5);

  private final List<PrefixIndex> opened = new ArrayList<>();

  /** A builder for the index under test (subclasses add the Redis connection). */
  abstract PrefixIndexBuilder builder();

  PrefixIndex open(PrefixIndexBuilder builder) {
    PrefixIndex index = builder.indexName(getClass().getSimpleName()).build();
    opened.add(index);
    return index;
  }

  PrefixIndex open() {
    return open(builder().groups(3));
  }

  @AfterEach
  void closeIndexes() {
    opened.forEach(PrefixIndex::close);
  }

  static Lease lease(PrefixIndex index, StreamId stream) {
    return index.acquireLease(stream, OWNER, LONG).orElseThrow();
  }

  static LookupResult lookup(PrefixIndex index, List<Long> keys, String... pods) {
    return index.lookup(LookupRequest.of(MODEL, KeyMode.ENGINE, keys, List.of(pods)));
  }

  static LookupResult lookup(PrefixIndex index, long[] keys, String... pods) {
    return lookup(index, Arrays.stream(keys).boxed().toList(), pods);
  }

  @Test
  void apply_watermarkCases() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(MODEL, "p");
    Lease t = lease(index, s);
    assertThat(index.watermark(s)).isEmpty();
    assertThat(index.apply(s, Events.mode(s), 7, t, batch()).status())
        .isEqualTo(ApplyStatus.APPLIED);
    assertThat(index.apply(s, Events.mode(s), 8, t, batch()).status())
        .isEqualTo(ApplyStatus.APPLIED);
    assertThat(index.apply(s, Events.mode(s), 8, t, batch(stored(hashes(1, 2), null, null))))
        .isEqualTo(ApplyResult.of(ApplyStatus.DUPLICATE, 8));
    assertThat(index.apply(s, Events.mode(s), 3, t, batch()).status())
        .isEqualTo(ApplyStatus.DUPLICATE);
    assertThat(index.apply(s, Events.mode(s), 10, t, batch(stored(hashes(1, 2), null, null))))
        .isEqualTo(ApplyResult.of(ApplyStatus.GAP, 8));
    assertThat(lookup(index, hashes(1, 2), "p").pods().get("p").depth()).isZero();
    assertThat(index.apply(s, Events.mode(s), 9, t, batch(stored(hashes(1, 2), null, null))))
        .isEqualTo(new ApplyResult(ApplyStatus.APPLIED, 9, 2, 0, 0));
    assertThat(index.watermark(s)).hasValue(9);
  }

  /**
   * Consecutive batches applied as one call: the watermark moves over the whole range, a retry or
   * an overlap with what is applied changes nothing, and a range past watermark + 1 is a gap.
   */
  @Test
  void applyRange_consecutiveBatchesAsOne_watermarkCases() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(MODEL, "p");
    Lease t = lease(index, s);
    KeyMode mode = Events.mode(s);
    index.apply(s, mode, 0, t, batch(stored(hashes(1, 4), null, null)));
    KvEventBatch three =
        batch(stored(hashes(100, 3), null, null), removed(hashes(1, 4).subList(2, 4), null));
    assertThat(index.applyAsync(s, mode, 1, 3, t, three, false).join())
        .isEqualTo(new ApplyResult(ApplyStatus.APPLIED, 3, 3, 2, 0));
    assertThat(index.watermark(s)).hasValue(3);
    assertThat(lookup(index, hashes(1, 4), "p").pods().get("p").depth()).isEqualTo(2);
    assertThat(lookup(index, hashes(100, 3), "p").pods().get("p").depth()).isEqualTo(3);

    assertThat(index.applyAsync(s, mode, 1, 3, t, three, false).join())
        .isEqualTo(ApplyResult.of(ApplyStatus.DUPLICATE, 3));
    KvEventBatch more = batch(stored(hashes(200, 2), null, null));
    assertThat(index.applyAsync(s, mode, 3, 5, t, more, false).join())
        .isEqualTo(ApplyResult.of(ApplyStatus.DUPLICATE, 3));
    assertThat(index.applyAsync(s, mode, 5, 6, t, more, false).join())
        .isEqualTo(ApplyResult.of(ApplyStatus.GAP, 3));
    assertThat(lookup(index, hashes(200, 2), "p").pods().get("p").depth()).isZero();
    assertThat(index.applyAsync(s, mode, 4, 5, t, more, false).join())
        .isEqualTo(new ApplyResult(ApplyStatus.APPLIED, 5, 2, 0, 0));
    assertThat(lookup(index, hashes(200, 2), "p").pods().get("p").depth()).isEqualTo(2);

    KvEventBatch tooLong = batch(stored(hashes(300, index.applyChunkBlocks() + 1), null, null));
    assertThatThrownBy(() -> index.applyAsync(s, mode, 6, 7, t, tooLong, false))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("apply them one by one");
    assertThatThrownBy(() -> index.applyAsync(s, mode, 7, 6, t, more, false))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("past the last");
    assertThat(index.applyAsync(s, mode, 6, 6, t, tooLong, false).join().status())
        .isEqualTo(ApplyStatus.APPLIED);
  }

  /** A stream's keys derived once apply its batches as its id does, call after call. */
  @Test
  void applyByKeys_sameAsByStream() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(MODEL, "p");
    Lease t = lease(index, s);
    KeyMode mode = Events.mode(s);
    StreamWrites.Keys keys = index.keys(s, mode);
    assertThat(keys.stream()).isEqualTo(s);
    assertThat(keys.mode()).isEqualTo(mode);
    KvEventBatch first = batch(stored(hashes(1, 4), null, null));
    assertThat(index.applyAsync(keys, 0, 0, t, first, false).join())
        .isEqualTo(new ApplyResult(ApplyStatus.APPLIED, 0, 4, 0, 0));
    KvEventBatch next = batch(removed(hashes(1, 4).subList(2, 4), null));
    assertThat(index.applyAsync(keys, 1, 1, t, next, false).join())
        .isEqualTo(new ApplyResult(ApplyStatus.APPLIED, 1, 0, 2, 0));
    assertThat(index.applyAsync(keys, 1, 1, t, next, false).join())
        .isEqualTo(ApplyResult.of(ApplyStatus.DUPLICATE, 1));
    assertThat(index.applyAsync(s, mode, 2, 2, t, first, false).join().status())
        .isEqualTo(ApplyStatus.APPLIED);
    assertThat(index.watermark(s)).hasValue(2);
    assertThat(lookup(index, hashes(1, 4), "p").pods().get("p").depth()).isEqualTo(4);
  }

  /** A call's plan applies its batches as their events would; one counted in another mode not. */
  @Test
  void applyByPlan_appliesItsBatches_aPlanOfAnotherKeyModeRefused() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(MODEL, "p");
    Lease t = lease(index, s);
    KeyMode mode = Events.mode(s);
    KeyMode other = mode == KeyMode.ENGINE ? KeyMode.TOKEN : KeyMode.ENGINE;
    StreamWrites.Keys keys = index.keys(s, mode);
    KvEventBatch two =
        batch(stored(hashes(1, 4), null, null), removed(hashes(1, 4).subList(2, 4), null));

    assertThatThrownBy(() -> index.applyAsync(keys, ApplyPlan.of(other, 0, 1, two), t, false))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("make the plan with the stream's mode");
    assertThat(index.watermark(s)).isEmpty();
    assertThat(index.applyAsync(keys, ApplyPlan.of(mode, 0, 1, two), t, false).join())
        .isEqualTo(new ApplyResult(ApplyStatus.APPLIED, 1, 4, 2, 0));
    assertThat(lookup(index, hashes(1, 4), "p").pods().get("p").depth()).isEqualTo(2);
  }

  @Test
  void purge_resetWatermark_acceptsAnyNextSeq() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(MODEL, "p");
    Lease t = lease(index, s);
    index.apply(s, Events.mode(s), 100, t, batch(stored(hashes(1, 3), null, null)));
    assertThat(index.purge(s, t, PurgeMode.KEEP_WATERMARK)).isEqualTo(PurgeStatus.PURGED);
    assertThat(index.watermark(s)).hasValue(100);
    assertThat(index.apply(s, Events.mode(s), 5, t, batch()).status())
        .isEqualTo(ApplyStatus.DUPLICATE);
    assertThat(index.purge(s, t, PurgeMode.RESET_WATERMARK)).isEqualTo(PurgeStatus.PURGED);
    assertThat(index.watermark(s)).isEmpty();
    assertThat(
            index.apply(s, Events.mode(s), 5, t, batch(stored(hashes(1, 1), null, null))).status())
        .isEqualTo(ApplyStatus.APPLIED);
    assertThat(lookup(index, hashes(1, 3), "p").pods().get("p").depth()).isEqualTo(1);
  }

  @Test
  void apply_staleToken_fenced() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(MODEL, "p");
    Lease t = lease(index, s);
    assertThat(index.releaseLease(s, t)).isTrue();
    Lease t2 = index.acquireLease(s, "ingester-2", LONG).orElseThrow();
    assertThat(t2).isNotEqualTo(t);
    assertThat(
            index.apply(s, Events.mode(s), 1, t, batch(stored(hashes(1, 1), null, null))).status())
        .isEqualTo(ApplyStatus.FENCED);
    assertThat(index.purge(s, t, PurgeMode.RESET_WATERMARK)).isEqualTo(PurgeStatus.FENCED);
    assertThat(
            index.apply(s, Events.mode(s), 1, t2, batch(stored(hashes(1, 1), null, null))).status())
        .isEqualTo(ApplyStatus.APPLIED);
    assertThat(index.purge(s, t, PurgeMode.RESET_WATERMARK)).isEqualTo(PurgeStatus.FENCED);
    assertThat(lookup(index, hashes(1, 1), "p").pods().get("p").depth()).isEqualTo(1);
  }

  @Test
  void apply_withoutLease_fenced() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(MODEL, "p");
    assertThat(index.apply(s, Events.mode(s), 1, new Lease(1, OWNER), batch()).status())
        .isEqualTo(ApplyStatus.FENCED);
  }

  @Test
  void acquireLease_cases() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(MODEL, "p");
    Lease t = lease(index, s);
    assertThat(index.acquireLease(s, OWNER, LONG)).hasValue(t);
    assertThat(index.acquireLease(s, "other", LONG)).isEmpty();
    assertThat(index.renewLease(s, t, LONG)).isTrue();
    assertThat(index.renewLease(s, new Lease(t.token() + 1, OWNER), LONG)).isFalse();
    assertThat(index.renewLease(s, new Lease(t.token(), "other"), LONG)).isFalse();
    assertThat(index.releaseLease(s, new Lease(t.token(), "other"))).isFalse();
    assertThat(index.releaseLease(s, t)).isTrue();
    assertThat(index.renewLease(s, t, LONG)).isFalse();
    Optional<Lease> next = index.acquireLease(s, "other", LONG);
    assertThat(next).isPresent();
    assertThat(next.get().token()).isGreaterThan(t.token());
  }

  @Test
  void apply_sameTokenAnotherOwner_fenced() {
    // What a flushed or failed-over index can do: hand the same token to a second owner.
    PrefixIndex index = open();
    StreamId s = StreamId.of(MODEL, "p");
    Lease mine = lease(index, s);
    Lease impostor = new Lease(mine.token(), "ingester-2");
    assertThat(index.apply(s, Events.mode(s), 1, impostor, batch()).status())
        .isEqualTo(ApplyStatus.FENCED);
    assertThat(index.purge(s, impostor, PurgeMode.KEEP_WATERMARK)).isEqualTo(PurgeStatus.FENCED);
  }

  /** A rebuild's staged history is invisible until published, then shown whole. */
  @Test
  void applyStaged_invisibleUntilPublished() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(MODEL, "p");
    StreamId other = new StreamId(MODEL, "p", 1);
    Lease t = lease(index, s);
    index.apply(
        other,
        Events.mode(other),
        0,
        lease(index, other),
        batch(stored(hashes(50, 2), null, null)));
    assertThat(
            index
                .apply(s, Events.mode(s), 0, t, batch(stored(hashes(1, 3), null, null)), true)
                .status())
        .isEqualTo(ApplyStatus.APPLIED);
    assertThat(
            index.apply(s, Events.mode(s), 1, t, batch(removed(hashes(3, 1), null)), true).status())
        .isEqualTo(ApplyStatus.APPLIED);
    assertThat(lookup(index, hashes(1, 3), "p").pods().get("p").depth())
        .as("staged: not seen")
        .isZero();
    assertThat(index.staged(s)).isTrue();
    assertThat(index.staged(other)).isFalse();
    assertThat(lookup(index, hashes(50, 2), "p").pods().get("p").depth())
        .as("the pod's other rank still is")
        .isEqualTo(2);
    assertThat(index.publish(s, new Lease(t.token(), "someone-else")))
        .isEqualTo(PurgeStatus.FENCED);
    assertThat(index.publish(s, t)).isEqualTo(PurgeStatus.PURGED);
    assertThat(lookup(index, hashes(1, 3), "p").pods().get("p").depth()).isEqualTo(2);
    assertThat(index.watermark(s)).hasValue(1);
    assertThat(index.staged(s)).isFalse();

    index.apply(s, Events.mode(s), 2, t, batch(stored(hashes(10, 1), null, null)), true);
    assertThat(lookup(index, hashes(1, 3), "p").pods().get("p").depth())
        .as("staged again: hidden again")
        .isZero();
    index.apply(s, Events.mode(s), 3, t, batch());
    assertThat(lookup(index, hashes(1, 3), "p").pods().get("p").depth())
        .as("an unstaged batch shows the stream")
        .isEqualTo(2);
  }

  /**
   * A rebuild whose history so far stores nothing (a clear, removals) holds no slot, and is still a
   * rebuild: a new owner that takes it over goes on staged, or the history it applies next would
   * show lookups a past state.
   */
  @Test
  void applyStaged_nothingHeldYet_stillStagedUntilPublished() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(MODEL, "p");
    Lease t = lease(index, s);
    assertThat(
            index.apply(s, Events.mode(s), 0, t, batch(removed(hashes(3, 1), null)), true).status())
        .isEqualTo(ApplyStatus.APPLIED);
    assertThat(index.watermark(s)).hasValue(0);
    assertThat(index.staged(s)).as("a staged rebuild holding nothing yet").isTrue();
    assertThat(index.publish(s, t)).isEqualTo(PurgeStatus.PURGED);
    assertThat(index.staged(s)).as("published").isFalse();
    assertThat(index.watermark(s)).hasValue(0);

    index.apply(s, Events.mode(s), 1, t, batch(removed(hashes(4, 1), null)), true);
    assertThat(index.staged(s)).isTrue();
    index.apply(s, Events.mode(s), 2, t, batch());
    assertThat(index.staged(s)).as("an unstaged batch ends it").isFalse();
    assertThat(index.watermark(s)).hasValue(2);
  }

  @Test
  void lookup_tiers_depthsAndScore() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(MODEL, "p");
    Lease t = lease(index, s);
    index.apply(
        s,
        Events.mode(s),
        1,
        t,
        batch(
            stored(hashes(1, 2), null, null),
            stored(hashes(3, 2), 2L, "cpu"),
            stored(hashes(5, 1), 4L, "FS"),
            stored(hashes(6, 1), 5L, "lmcache-remote"),
            stored(hashes(3, 1), 2L, "GPU")));
    PodMatch m = lookup(index, hashes(1, 8), "p", "q").pods().get("p");
    assertThat(m.depth()).isEqualTo(6);
    assertThat(m.gpuDepth()).isEqualTo(3);
    assertThat(m.gpuCpuDepth()).isEqualTo(4);
    assertThat(m.score()).isCloseTo(1 + 1 + 1 + 0.8 + 0.5 + 0.5, within());
    assertThat(m.rankDepths()).isEqualTo(Map.of(0, 6));
    index.apply(
        s, Events.mode(s), 2, t, batch(removed(hashes(3, 1), "GPU"), removed(hashes(2, 1), null)));
    m = lookup(index, hashes(1, 8), "p").pods().get("p");
    assertThat(m.depth()).isEqualTo(1);
    assertThat(m.gpuDepth()).isEqualTo(1);
  }

  @Test
  void lookup_ranks_podIsBestRank() {
    PrefixIndex index = open();
    StreamId r0 = new StreamId(MODEL, "p", 0);
    StreamId r3 = new StreamId(MODEL, "p", 3);
    index.apply(r0, Events.mode(r0), 0, lease(index, r0), batch(stored(hashes(1, 2), null, null)));
    index.apply(r3, Events.mode(r3), 0, lease(index, r3), batch(stored(hashes(1, 5), null, "CPU")));
    PodMatch m = lookup(index, hashes(1, 6), "p").pods().get("p");
    assertThat(m.depth()).isEqualTo(5);
    assertThat(m.gpuDepth()).isEqualTo(2);
    assertThat(m.gpuCpuDepth()).isEqualTo(5);
    assertThat(m.score()).isCloseTo(4.0, within());
    assertThat(m.rankDepths()).isEqualTo(Map.of(0, 2, 3, 5));
  }

  @Test
  void apply_allBlocksCleared_laterEventsStartFresh() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(MODEL, "p");
    Lease t = lease(index, s);
    index.apply(s, Events.mode(s), 1, t, batch(stored(hashes(1, 4), null, null)));
    index.apply(s, Events.mode(s), 2, t, batch(cleared(), stored(hashes(1, 2), null, null)));
    assertThat(lookup(index, hashes(1, 4), "p").pods().get("p").depth()).isEqualTo(2);
    index.apply(s, Events.mode(s), 3, t, batch(stored(hashes(10, 2), null, null), cleared()));
    assertThat(lookup(index, hashes(1, 4), "p").pods().get("p").depth()).isZero();
    assertThat(lookup(index, hashes(10, 2), "p").pods().get("p").depth()).isZero();
  }

  @Test
  void lookup_otherModelOrCacheGroup_invisible() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(MODEL, "p");
    index.apply(s, Events.mode(s), 1, lease(index, s), batch(stored(hashes(1, 2), null, null)));
    assertThat(
            index
                .lookup(new LookupRequest(MODEL, KeyMode.ENGINE, Events.keys(1, 2), Set.of("p"), 1))
                .pods()
                .get("p")
                .depth())
        .isZero();
    assertThat(
            index
                .lookup(LookupRequest.of("m2", KeyMode.ENGINE, hashes(1, 2), List.of("p")))
                .pods()
                .get("p")
                .depth())
        .isZero();
  }

  @Test
  void tokenMode_chainFromRoot_matchesTokenKeys() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(TOKEN_MODEL, "p");
    Lease t = lease(index, s);
    List<Integer> tokens = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      tokens.add(1000 + i);
    }
    // Engine hashes are arbitrary (pickle-based); only tokens define the keys.
    ApplyResult r =
        index.apply(
            s,
            Events.mode(s),
            1,
            t,
            batch(
                stored(List.of(501L, 502L), null, tokens.subList(0, 8), 4, null, null, null),
                stored(List.of(503L), 502L, tokens.subList(8, 12), 4, null, null, null),
                stored(List.of(600L), 999L, tokens.subList(8, 12), 4, null, null, null)));
    assertThat(r).isEqualTo(new ApplyResult(ApplyStatus.APPLIED, 1, 3, 0, 1));
    long[] keys =
        TokenKeys.chain(
            TokenKeys.root(TOKEN_MODEL, null), tokens.stream().mapToInt(i -> i).toArray(), 4);
    List<Long> chain = List.of(keys[0], keys[1], keys[2]);
    assertThat(tokenDepth(index, chain, "p")).isEqualTo(3);
    r = index.apply(s, Events.mode(s), 2, t, batch(removed(List.of(502L, 777L), null)));
    assertThat(r).isEqualTo(new ApplyResult(ApplyStatus.APPLIED, 2, 0, 1, 1));
    assertThat(tokenDepth(index, chain, "p")).isEqualTo(1);
    // 502 is gone from the map: a child of it is dropped, never re-rooted.
    r =
        index.apply(
            s,
            Events.mode(s),
            3,
            t,
            batch(stored(List.of(504L), 502L, tokens.subList(4, 8), 4, null, null, null)));
    assertThat(r).isEqualTo(new ApplyResult(ApplyStatus.APPLIED, 3, 0, 0, 1));
  }

  @Test
  void tokenMode_loraAndMismatchedTokens() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(TOKEN_MODEL, "p");
    Lease t = lease(index, s);
    List<Integer> tokens = List.of(1, 2, 3, 4);
    ApplyResult r =
        index.apply(
            s,
            Events.mode(s),
            1,
            t,
            batch(
                stored(List.of(1L), null, tokens, 4, null, "adapter-x", null),
                stored(List.of(2L, 3L), null, tokens, 4, null, null, null)));
    assertThat(r).isEqualTo(new ApplyResult(ApplyStatus.APPLIED, 1, 1, 0, 2));
    long lora =
        TokenKeys.chain(TokenKeys.root(TOKEN_MODEL, "adapter-x"), new int[] {1, 2, 3, 4}, 4)[0];
    long base = TokenKeys.chain(TokenKeys.root(TOKEN_MODEL, null), new int[] {1, 2, 3, 4}, 4)[0];
    assertThat(tokenDepth(index, List.of(lora), "p")).isEqualTo(1);
    assertThat(tokenDepth(index, List.of(base), "p")).isZero();
  }

  @Test
  void tokenMode_9000BlockEvents_applyInChunks() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(TOKEN_MODEL, "p");
    Lease t = lease(index, s);
    int n = 9000;
    List<Integer> tokens = new ArrayList<>();
    for (int i = 0; i < n * 2; i++) {
      tokens.add(i);
    }
    List<Long> engine = hashes(1, n);
    ApplyResult r =
        index.apply(
            s, Events.mode(s), 0, t, batch(stored(engine, null, tokens, 2, null, null, null)));
    assertThat(r).isEqualTo(new ApplyResult(ApplyStatus.APPLIED, 0, n, 0, 0));
    long[] keys =
        TokenKeys.chain(
            TokenKeys.root(TOKEN_MODEL, null), tokens.stream().mapToInt(i -> i).toArray(), 2);
    List<Long> chain = new ArrayList<>();
    for (long key : keys) {
      chain.add(key);
    }
    assertThat(tokenDepth(index, chain, "p")).isEqualTo(n);
    r = index.apply(s, Events.mode(s), 1, t, batch(removed(engine.subList(100, n), null)));
    assertThat(r).isEqualTo(new ApplyResult(ApplyStatus.APPLIED, 1, 0, n - 100, 0));
    assertThat(tokenDepth(index, chain, "p")).isEqualTo(100);
  }

  @Test
  void lookup_10000BlockPrompt_fullDepth() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(MODEL, "p");
    index.apply(
        s, Events.mode(s), 0, lease(index, s), batch(stored(hashes(1, 10_000), null, null)));
    assertThat(lookup(index, hashes(1, 10_001), "p").pods().get("p").depth()).isEqualTo(10_000);
  }

  @Test
  void lookup_depthsAtReadChunkEdges_exact() {
    PrefixIndex index = open();
    Map<String, Integer> depths = Map.of("a", 255, "b", 256, "c", 257, "d", 1280, "e", 1281);
    depths.forEach(
        (pod, n) -> {
          StreamId s = StreamId.of(MODEL, pod);
          index.apply(
              s, Events.mode(s), 0, lease(index, s), batch(stored(hashes(1, n), null, null)));
        });
    LookupResult r = lookup(index, hashes(1, 3000), "a", "b", "c", "d", "e", "none");
    depths.forEach((pod, n) -> assertThat(r.pods().get(pod).depth()).as(pod).isEqualTo(n));
    assertThat(r.pods().get("none").depth()).isZero();
  }

  @Test
  void lookupRequest_tooManyCandidates_refused() {
    List<String> pods = new ArrayList<>();
    for (int i = 0; i <= LookupRequest.MAX_CANDIDATES; i++) {
      pods.add("p" + i);
    }
    org.assertj.core.api.Assertions.assertThatThrownBy(
            () -> LookupRequest.of(MODEL, KeyMode.ENGINE, hashes(1, 1), pods))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at most 4096");
  }

  static int tokenDepth(PrefixIndex index, List<Long> keys, String pod) {
    return index
        .lookup(LookupRequest.of(TOKEN_MODEL, KeyMode.TOKEN, keys, List.of(pod)))
        .pods()
        .get(pod)
        .depth();
  }

  @Test
  void lookup_hostileNames_neverCollide() {
    PrefixIndex index = open();
    String big = "x{}:/".repeat(2048);
    List<String[]> names =
        List.of(
            new String[] {"a:b", "c"},
            new String[] {"a", "b:c"},
            new String[] {"{m}", "}p{"},
            new String[] {"m/1", "p/2"},
            new String[] {"модель ✓", "pod-\uD83D\uDE80"},
            new String[] {big, big + "1"},
            new String[] {big + "1", big});
    for (int i = 0; i < names.size(); i++) {
      StreamId s = StreamId.of(names.get(i)[0], names.get(i)[1]);
      assertThat(
              index
                  .apply(
                      s,
                      Events.mode(s),
                      0,
                      lease(index, s),
                      batch(stored(hashes(1, i + 1), null, null)))
                  .status())
          .isEqualTo(ApplyStatus.APPLIED);
    }
    for (int i = 0; i < names.size(); i++) {
      String model = names.get(i)[0];
      String pod = names.get(i)[1];
      LookupResult r =
          index.lookup(
              LookupRequest.of(model, KeyMode.ENGINE, hashes(1, 10), List.of(pod, "none")));
      assertThat(r.pods().get(pod).depth()).as("%s / %s", i, pod.length()).isEqualTo(i + 1);
      assertThat(r.pods().get("none").depth()).isZero();
    }
  }

  @Test
  void lookup_expiredPod_invisibleUntilHeartbeat() {
    PrefixIndex index = open(builder().podTtl(Duration.ofMillis(150)));
    StreamId s = StreamId.of(MODEL, "p");
    index.apply(s, Events.mode(s), 0, lease(index, s), batch(stored(hashes(1, 2), null, null)));
    assertThat(lookup(index, hashes(1, 2), "p").pods().get("p").depth()).isEqualTo(2);
    Poll.until(() -> lookup(index, hashes(1, 2), "p").pods().get("p").depth() == 0);
    assertThat(index.heartbeat(MODEL, "p", LONG)).isTrue();
    assertThat(lookup(index, hashes(1, 2), "p").pods().get("p").depth()).isEqualTo(2);
  }

  @Test
  void speculate_countsAsGpuUntilTheEngineConfirms() {
    PrefixIndex index = open();
    assertThat(index.heartbeat(MODEL, "p", LONG)).isTrue();
    assertThat(
            index
                .speculateAsync(
                    MODEL,
                    KeyMode.ENGINE,
                    "p",
                    Events.keys(1, 3),
                    0,
                    PrefixIndex.MAX_SPECULATIVE_TTL)
                .join())
        .isTrue();
    LookupResult r = lookup(index, hashes(1, 4), "p", "q");
    PodMatch spec = r.pods().get("p");
    assertThat(spec.depth()).isEqualTo(3);
    assertThat(spec.gpuDepth()).isEqualTo(3);
    assertThat(spec.speculative()).isTrue();
    assertThat(spec.rankDepths()).isEmpty();
    assertThat(r.pods().get("q").depth()).isZero();
    assertThat(index.lookup(LookupRequest.of(MODEL, KeyMode.TOKEN, hashes(1, 4), List.of("p"))))
        .satisfies(other -> assertThat(other.pods().get("p").depth()).isZero());

    StreamId s = StreamId.of(MODEL, "p");
    Lease t = lease(index, s);
    index.apply(s, Events.mode(s), 0, t, batch(stored(hashes(1, 2), null, "CPU")));
    PodMatch partly = lookup(index, hashes(1, 4), "p").pods().get("p");
    assertThat(partly.depth()).isEqualTo(3);
    assertThat(partly.speculative()).isTrue();
    assertThat(partly.rankDepths()).containsEntry(0, 3);

    index.apply(s, Events.mode(s), 1, t, batch(stored(hashes(1, 4), null, "CPU")));
    PodMatch confirmed = lookup(index, hashes(1, 4), "p").pods().get("p");
    assertThat(confirmed.depth()).isEqualTo(4);
    assertThat(confirmed.gpuDepth()).isEqualTo(3);
    assertThat(confirmed.speculative()).isFalse();
  }

  @Test
  void speculate_shortAndLongPrompts_markTheRightCandidate() {
    PrefixIndex index = open();
    assertThat(index.heartbeat(MODEL, "p", LONG)).isTrue();
    assertThat(
            index
                .speculateAsync(
                    MODEL,
                    KeyMode.ENGINE,
                    "p",
                    Events.keys(1, 300),
                    0,
                    PrefixIndex.MAX_SPECULATIVE_TTL)
                .join())
        .isTrue();
    StreamId q = StreamId.of(MODEL, "q");
    index.apply(q, Events.mode(q), 0, lease(index, q), batch(stored(hashes(1, 100), null, null)));
    for (int blocks : List.of(208, 300, 1000)) {
      int credited = Math.min(blocks, 300);
      LookupResult r = lookup(index, hashes(1, blocks), "q", "none", "p");
      assertThat(r.pods().get("p").depth()).as("%d blocks", blocks).isEqualTo(credited);
      assertThat(r.pods().get("p").gpuDepth()).isEqualTo(credited);
      assertThat(r.pods().get("p").speculative()).isTrue();
      assertThat(r.pods().get("q").depth()).isEqualTo(100);
      assertThat(r.pods().get("q").speculative()).isFalse();
      assertThat(r.pods().get("none").depth()).isZero();
    }
  }

  @Test
  void speculate_expiresByItself() {
    PrefixIndex index = open();
    assertThat(index.heartbeat(MODEL, "p", LONG)).isTrue();
    index
        .speculateAsync(MODEL, KeyMode.ENGINE, "p", Events.keys(1, 2), 0, Duration.ofMillis(150))
        .join();
    assertThat(lookup(index, hashes(1, 2), "p").pods().get("p").depth()).isEqualTo(2);
    Poll.until(() -> lookup(index, hashes(1, 2), "p").pods().get("p").depth() == 0);
  }

  /**
   * A route counts for the prompt's blocks it shares to within 15: its segments' heads, and its
   * blocks at multiples of 16 and its last, as far as the prompt has the same keys there.
   */
  @Test
  void speculate_promptThatParts_creditedToWithinASegment() {
    PrefixIndex index = open();
    assertThat(index.heartbeat(MODEL, "p", LONG)).isTrue();
    long[] route = Events.keys(1, 40);
    index
        .speculateAsync(MODEL, KeyMode.ENGINE, "p", route, 0, PrefixIndex.MAX_SPECULATIVE_TTL)
        .join();
    long[] parted = Arrays.copyOf(route, 50);
    for (int i = 37; i < parted.length; i++) {
      parted[i] = 1000 + i;
    }
    // shares 37 blocks: blocks 0..31 end at a multiple of 16, block 32 is a segment head
    assertThat(lookup(index, parted, "p").pods().get("p").depth()).isEqualTo(33);
    assertThat(lookup(index, Arrays.copyOf(route, 38), "p").pods().get("p").depth())
        .as("a prompt that stops inside the route's last segment")
        .isEqualTo(33);
    assertThat(lookup(index, Events.keys(1, 60), "p").pods().get("p").depth())
        .as("a prompt that extends the route: its last block")
        .isEqualTo(40);
    assertThat(lookup(index, Events.keys(2, 60), "p").pods().get("p").depth())
        .as("another chain")
        .isZero();
  }

  /** Routes name live pods only: one to a pod with no record, or a dead one, is not kept. */
  @Test
  void speculate_podWithoutLiveRecord_recordsNothing() {
    PrefixIndex index = open(builder().podTtl(Duration.ofMillis(200)));
    assertThat(
            index
                .speculateAsync(
                    MODEL,
                    KeyMode.ENGINE,
                    "made-up",
                    Events.keys(1, 3),
                    0,
                    PrefixIndex.MAX_SPECULATIVE_TTL)
                .join())
        .isFalse();
    assertThat(index.heartbeat(MODEL, "made-up", LONG)).isTrue();
    assertThat(lookup(index, hashes(1, 3), "made-up").pods().get("made-up").depth())
        .as("not recorded, so nothing once the pod is live")
        .isZero();
    StreamId s = StreamId.of(MODEL, "p");
    index.apply(s, Events.mode(s), 0, lease(index, s), batch(stored(hashes(1, 1), null, null)));
    Poll.until(() -> lookup(index, hashes(1, 1), "p").pods().get("p").depth() == 0);
    assertThat(
            index
                .speculateAsync(
                    MODEL,
                    KeyMode.ENGINE,
                    "p",
                    Events.keys(1, 3),
                    0,
                    PrefixIndex.MAX_SPECULATIVE_TTL)
                .join())
        .as("a pod whose record expired")
        .isFalse();
  }

  @Test
  void sweepDeparted_forgetsPodsGoneLongerThanRetention() {
    PrefixIndex index =
        open(
            builder()
                .groups(2)
                .podTtl(Duration.ofMillis(100))
                .departedRetention(Duration.ofMillis(100)));
    StreamId gone = StreamId.of(MODEL, "gone");
    StreamId stays = StreamId.of(MODEL, "stays");
    Lease tg = lease(index, gone);
    index.apply(gone, Events.mode(gone), 5, tg, batch(stored(hashes(1, 3), null, null)));
    index.apply(
        stays, Events.mode(stays), 7, lease(index, stays), batch(stored(hashes(1, 3), null, null)));
    assertThat(index.heartbeat(MODEL, "stays", LONG)).isTrue();
    Poll.until(
        () -> {
          sweepAll(index);
          return index.watermark(gone).isEmpty();
        });
    assertThat(index.watermark(stays)).hasValue(7);
    assertThat(lookup(index, hashes(1, 3), "gone", "stays").pods().get("stays").depth())
        .isEqualTo(3);
    assertThat(index.livePodsAsync(MODEL).join().orElseThrow()).containsExactly("stays");
    // It comes back: a fresh stream, so any sequence number applies, and only new blocks count.
    assertThat(
            index
                .apply(gone, Events.mode(gone), 0, tg, batch(stored(hashes(1, 2), null, null)))
                .status())
        .isEqualTo(ApplyStatus.APPLIED);
    assertThat(lookup(index, hashes(1, 3), "gone").pods().get("gone").depth()).isEqualTo(2);
  }

  public static void sweepAll(PrefixIndex index) {
    for (int g = 0; g < index.groups(); g++) {
      while (!index.sweepDeparted(g, 3).done()) {
        // bounded steps until the group's pass completes
      }
    }
  }

  /** A resync spacing that the tests of request intervals never reach. */
  private static final Duration SPACED = Duration.ofMillis(1);

  /**
   * However often routers ask (a short interval, or a request whose key was deleted), a stream
   * takes a resync at most once per spacing; another stream of the pod is not held back by it.
   */
  @Test
  void takeResync_withinTheSpacingOfTheLast_notTakenWhateverIsAsked() {
    PrefixIndex index = open();
    Duration spacing = Duration.ofMillis(700);
    Duration interval = Duration.ofMillis(20);
    StreamId rank0 = new StreamId(MODEL, "p", 0);
    StreamId rank1 = new StreamId(MODEL, "p", 1);
    index.requestResyncAsync(MODEL, "p", "first", interval).join();
    assertThat(index.takeResync(rank0, spacing)).contains("first");
    Poll.until(
        () ->
            index.requestResyncAsync(MODEL, "p", "again", Duration.ofMinutes(1)).join()
                == ResyncStatus.REQUESTED);
    assertThat(index.takeResync(rank0, spacing)).as("within the spacing").isEmpty();
    assertThat(index.takeResync(rank1, spacing)).as("another rank").contains("again");
    Poll.until(() -> index.takeResync(rank0, spacing).isPresent());
  }

  @Test
  void requestResync_onePerPodPerInterval_takenOncePerRank() {
    PrefixIndex index = open();
    Duration interval = Duration.ofMillis(300);
    StreamId rank0 = new StreamId(MODEL, "p:{x}", 0);
    StreamId rank1 = new StreamId(MODEL, "p:{x}", 1);
    assertThat(index.requestResyncAsync(MODEL, "p:{x}", "router-a: 20/32", interval).join())
        .isEqualTo(ResyncStatus.REQUESTED);
    assertThat(index.requestResyncAsync(MODEL, "p:{x}", "router-b", interval).join())
        .as("another router within the interval")
        .isEqualTo(ResyncStatus.STANDING);
    assertThat(index.takeResync(new StreamId(MODEL, "other", 0), SPACED)).isEmpty();
    assertThat(index.takeResync(new StreamId(TOKEN_MODEL, "p:{x}", 0), SPACED)).isEmpty();
    assertThat(index.takeResync(rank0, SPACED)).contains("router-a: 20/32");
    assertThat(index.takeResync(rank0, SPACED)).as("taken once").isEmpty();
    assertThat(index.takeResync(rank1, SPACED)).as("each rank once").contains("router-a: 20/32");
    assertThat(index.requestResyncAsync(MODEL, "p:{x}", "router-b", interval).join())
        .as("taken, it still stands until its interval ends")
        .isEqualTo(ResyncStatus.STANDING);
    Poll.until(
        () ->
            index.requestResyncAsync(MODEL, "p:{x}", "router-b", interval).join()
                == ResyncStatus.REQUESTED);
    assertThat(index.takeResync(rank0, SPACED)).contains("router-b");
  }

  @Test
  void evictionsInferred_markStandsForItsTtl_perPod() {
    PrefixIndex index = open();
    assertThat(index.evictionsInferredAsync(MODEL, "p:{x}").join()).isEmpty();
    assertThat(index.markEvictionsInferred(MODEL, "p:{x}", 2048, Duration.ofMillis(300))).isTrue();
    assertThat(index.evictionsInferredAsync(MODEL, "p:{x}").join()).hasValue(2048);
    assertThat(index.evictionsInferredAsync(MODEL, "other").join()).isEmpty();
    assertThat(index.evictionsInferredAsync(TOKEN_MODEL, "p:{x}").join()).isEmpty();
    Poll.until(() -> index.evictionsInferredAsync(MODEL, "p:{x}").join().isEmpty());
  }

  @Test
  void touches_readInOrderAfterTheCursor_byEveryRankOfThePod() {
    PrefixIndex index = open();
    StreamId rank0 = new StreamId(MODEL, "p:{x}", 0);
    StreamId rank1 = new StreamId(MODEL, "p:{x}", 1);
    String start = index.touches(rank0, null, 10).cursor();
    String start1 = index.touches(rank1, null, 10).cursor();
    assertThat(index.touches(rank0, start, 10).touches()).isEmpty();
    long before = System.currentTimeMillis();
    index.touchAsync(MODEL, "p:{x}", 0, new long[] {1, -2, Long.MAX_VALUE}, 3, 2, LONG).join();
    index.touchAsync(MODEL, "p:{x}", 1, new long[] {1}, -40, 1, LONG).join();
    index.touchAsync(MODEL, "other", 0, new long[] {9}, 0, 0, LONG).join();
    index.touchAsync(MODEL, "p:{x}", 0, new long[] {}, 0, 0, LONG).join();

    Touches first = index.touches(rank0, start, 2);
    assertThat(first.touches()).extracting(Touch::rank).containsExactly(0, 1);
    assertThat(first.touches()).extracting(Touch::errorBlocks).containsExactly(3, -40);
    assertThat(first.touches()).extracting(Touch::cachedBlocks).containsExactly(2, 1);
    assertThat(first.touches().get(0).atMillis())
        .as("recorded now, by the index's clock")
        .isBetween(before - 5_000, System.currentTimeMillis() + 5_000);
    assertThat(first.touches().get(0).blockKeys()).containsExactly(1, -2, Long.MAX_VALUE);
    Touches rest = index.touches(rank0, first.cursor(), 10);
    assertThat(rest.touches()).hasSize(1);
    assertThat(rest.touches().get(0).blockKeys()).isEmpty();
    assertThat(index.touches(rank0, rest.cursor(), 10).touches()).isEmpty();
    assertThat(index.touches(rank0, rest.cursor(), 10).cursor()).isEqualTo(rest.cursor());
    assertThat(first.more()).isTrue();
    assertThat(rest.more()).isFalse();
    assertThat(index.touches(rank1, start1, 10).touches())
        .as("each rank reads them all")
        .hasSize(3);
    assertThat(index.touches(rank1, null, 10).cursor())
        .as("a reader starting now")
        .isEqualTo(rest.cursor());
  }

  @Test
  void handOverInference_readByTheStreamsNextOwner_untilItsTtl() {
    PrefixIndex index = open();
    StreamId stream = new StreamId(MODEL, "p:{x}", 1);
    assertThat(index.inferenceHandover(stream)).isEmpty();
    long[] removals = {1, -2, Long.MAX_VALUE};
    assertThat(
            index
                .handOverInferenceAsync(
                    stream, new InferenceHandover(1234, removals), Duration.ofMillis(300))
                .join())
        .isTrue();

    assertThat(index.inferenceHandover(stream))
        .hasValueSatisfying(
            h -> {
              assertThat(h.sizeBlocks()).isEqualTo(1234);
              assertThat(h.removals()).containsExactly(1, -2, Long.MAX_VALUE);
            });
    assertThat(index.inferenceHandover(new StreamId(MODEL, "p:{x}", 0))).isEmpty();
    Poll.until(() -> index.inferenceHandover(stream).isEmpty());
  }

  @Test
  void reportLag_eachRanksLatestReport_withItsAge() {
    PrefixIndex index = open();
    assertThat(index.ingestLagAsync(MODEL, "p:{x}").join()).isEmpty();
    index.reportLagAsync(new StreamId(MODEL, "p:{x}", 0), Duration.ofSeconds(9), LONG).join();
    index.reportLagAsync(new StreamId(MODEL, "p:{x}", 0), Duration.ofMillis(1500), LONG).join();
    index.reportLagAsync(new StreamId(MODEL, "p:{x}", 1), Duration.ZERO, LONG).join();

    List<IngestLag> lags = index.ingestLagAsync(MODEL, "p:{x}").join();
    assertThat(lags).extracting(IngestLag::rank).containsExactlyInAnyOrder(0, 1);
    assertThat(lags)
        .filteredOn(l -> l.rank() == 0)
        .extracting(IngestLag::lag)
        .containsExactly(Duration.ofMillis(1500));
    assertThat(lags).allSatisfy(l -> assertThat(l.age()).isLessThan(Duration.ofSeconds(5)));
    assertThat(index.ingestLagAsync(MODEL, "other").join()).isEmpty();
  }

  @Test
  void touches_keepTheFirstBlocksAndThePodsLatestTouchesOnly() {
    PrefixIndex index = open();
    StreamId stream = new StreamId(MODEL, "p", 0);
    String start = index.touches(stream, null, 1).cursor();
    long[] keys = new long[PrefixIndex.MAX_TOUCH_BLOCKS + 5];
    keys[PrefixIndex.MAX_TOUCH_BLOCKS - 1] = 77;
    index.touchAsync(MODEL, "p", 0, keys, 0, 0, LONG).join();
    Touches longOne = index.touches(stream, start, 10);
    assertThat(longOne.touches().get(0).blockKeys())
        .hasSize(PrefixIndex.MAX_TOUCH_BLOCKS)
        .endsWith(77);

    for (int i = 0; i < PrefixIndex.MAX_TOUCHES + 300; i++) {
      index.touchAsync(MODEL, "p", 0, new long[] {i}, 0, 0, LONG).join();
    }
    List<Touch> all = new ArrayList<>();
    String cursor = start;
    Touches read;
    do {
      read = index.touches(stream, cursor, 1000);
      all.addAll(read.touches());
      cursor = read.cursor();
    } while (!read.touches().isEmpty());
    // Redis trims to about the cap (MAXLEN ~ drops whole nodes), never below it.
    assertThat(all.size()).isBetween(PrefixIndex.MAX_TOUCHES, PrefixIndex.MAX_TOUCHES + 200);
    assertThat(all.get(all.size() - 1).blockKeys()).containsExactly(PrefixIndex.MAX_TOUCHES + 299);
  }

  @Test
  void requestResync_longNote_refused() {
    PrefixIndex index = open();
    String note = "x".repeat(PrefixIndex.MAX_RESYNC_NOTE + 1);
    assertThatThrownBy(() -> index.requestResyncAsync(MODEL, "p", note, LONG))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("note length");
  }

  @Test
  void livePods_listsTheModelsLivePodsOnly() {
    PrefixIndex index = open(builder().groups(3).podTtl(Duration.ofMillis(300)));
    for (String pod : List.of("a", "b:{x}", "c")) {
      StreamId s = StreamId.of(MODEL, pod);
      index.apply(s, Events.mode(s), 0, lease(index, s), batch(stored(hashes(1, 2), null, null)));
    }
    StreamId other = StreamId.of(TOKEN_MODEL, "t");
    index.apply(other, Events.mode(other), 0, lease(index, other), batch());
    assertThat(index.livePodsAsync(MODEL).join().orElseThrow())
        .containsExactlyInAnyOrder("a", "b:{x}", "c");
    assertThat(index.livePodsAsync("nobody").join().orElseThrow()).isEmpty();
    Poll.until(() -> index.livePodsAsync(MODEL).join().orElseThrow().isEmpty());
    assertThat(index.heartbeat(MODEL, "c", LONG)).isTrue();
    // The list may be up to a second old (the Redis index reuses what it read).
    Poll.until(() -> index.livePodsAsync(MODEL).join().orElseThrow().equals(List.of("c")));
  }

  @Test
  void lookup_emptyPrompt_allNone() {
    PrefixIndex index = open();
    LookupResult r = lookup(index, List.of(), "a", "b");
    assertThat(r.complete()).isTrue();
    assertThat(r.pods()).containsOnlyKeys("a", "b");
    assertThat(r.pods().values()).allMatch(m -> m.depth() == 0, "holds no block");
  }

  /** The index under test, set up for {@link RandomFleet}'s models. */
  private PrefixIndex openFleetIndex() {
    return open(builder().groups(3));
  }

  /** The in-memory model the fleet's index is compared with. */
  private static PrefixIndex fleetModel() {
    return InMemoryPrefixIndex.of(PrefixIndex.builder().groups(3));
  }

  @Test
  void apply_randomStreams_matchModel() {
    RandomFleet fleet = new RandomFleet(20260101L);
    PrefixIndex index = openFleetIndex();
    PrefixIndex model = fleetModel();
    fleet.run(model, index, 600);
    fleet.compareLookups(model, index, 300);
    IndexFixtures.collectAllGarbage(index);
    fleet.compareLookups(model, index, 100);
    fleet.run(model, index, 200);
    fleet.compareLookups(model, index, 100);
  }

  /**
   * Lookups between every few events, from the same instance throughout: whatever a router caches
   * between lookups must never outlive a store, eviction, clear or restart.
   */
  @Test
  void lookups_interleavedWithChanges_matchModel() {
    RandomFleet fleet = new RandomFleet(20261130L);
    PrefixIndex index = openFleetIndex();
    PrefixIndex model = fleetModel();
    for (int round = 0; round < 30; round++) {
      fleet.run(model, index, 12);
      fleet.compareLookups(model, index, 4);
      if (round % 15 == 14) {
        IndexFixtures.collectAllGarbage(index);
      }
    }
  }

  /**
   * Streams that lose no event: every block's chain position is known, so a Redis index reads
   * segments, here at the smallest segment limit so that branches overflow some.
   */
  @Test
  void lookups_locatedStreams_matchModel() {
    RandomFleet fleet = new RandomFleet(20261201L, false);
    PrefixIndex index = open(builder().groups(3).segmentSlots(16));
    PrefixIndex model = fleetModel();
    for (int round = 0; round < 20; round++) {
      fleet.run(model, index, 25);
      fleet.compareLookups(model, index, 8);
      if (round % 10 == 9) {
        IndexFixtures.collectAllGarbage(index);
      }
    }
  }

  /**
   * Segment edges: chains stored in batches across segment boundaries, branches below one head past
   * the segment limit, blocks stored under a parent no one holds (then the parent, then their
   * removal), a purge and GC. Every lookup, of every prefix length that crosses an edge, matches
   * the model.
   */
  @Test
  void lookup_segmentEdges_matchModel() {
    PrefixIndex index = open(builder().groups(3).segmentSlots(16));
    PrefixIndex model = InMemoryPrefixIndex.of(PrefixIndex.builder().groups(3));
    List<PrefixIndex> both = List.of(model, index);
    Map<PrefixIndex, Map<String, Lease>> leases = new HashMap<>();
    List<Long> x = Events.hashes(1000, 40);
    List<Long> w = Events.hashes(5000, 5);
    List<List<Long>> prompts = new ArrayList<>();
    prompts.add(x);
    for (int z = 0; z < 3; z++) {
      List<Long> branch = new ArrayList<>(x.subList(0, 20));
      branch.addAll(Events.hashes(2000 + 100 * z, 10));
      prompts.add(branch);
    }
    List<Long> extended = new ArrayList<>(x);
    extended.add(4999L);
    extended.addAll(w);
    prompts.add(extended);
    // Key lists that start inside a chain: at a segment head (block 16), inside a segment, alone.
    prompts.add(x.subList(16, 40));
    prompts.add(x.subList(5, 40));
    prompts.add(List.of(x.get(7)));
    prompts.add(List.of(x.get(32)));
    Map<String, Long> seqs = new HashMap<>();
    java.util.function.BiConsumer<String, KvEvent[]> apply =
        (pod, events) -> {
          StreamId s = StreamId.of(MODEL, pod);
          long seq = seqs.merge(pod, 1L, Long::sum);
          for (PrefixIndex i : both) {
            Lease token =
                leases
                    .computeIfAbsent(i, k -> new HashMap<>())
                    .computeIfAbsent(pod, p -> lease(i, s));
            assertThat(i.apply(s, Events.mode(s), seq, token, batch(events)).status())
                .isEqualTo(ApplyStatus.APPLIED);
          }
        };
    Runnable compare =
        () -> {
          for (List<Long> prompt : prompts) {
            for (int length : new int[] {1, 15, 16, 17, 20, 21, 31, 32, 33, prompt.size()}) {
              LookupRequest request =
                  LookupRequest.of(
                      MODEL,
                      KeyMode.ENGINE,
                      prompt.subList(0, Math.min(length, prompt.size())),
                      List.of("a", "b", "c", "d", "ghost"));
              RandomFleet.assertSameMatches(request, model.lookup(request), index.lookup(request));
            }
          }
        };
    apply.accept("a", new KvEvent[] {stored(x.subList(0, 10), null, null)});
    apply.accept("a", new KvEvent[] {stored(x.subList(10, 20), x.get(9), "cpu")});
    apply.accept("a", new KvEvent[] {stored(x.subList(20, 40), x.get(19), null)});
    apply.accept("b", new KvEvent[] {stored(x.subList(0, 40), null, null)});
    compare.run();
    // Branches below the head at block 16 until its segment overflows, then one more.
    apply.accept("c", new KvEvent[] {stored(x.subList(0, 20), null, null)});
    apply.accept("c", new KvEvent[] {stored(prompts.get(1).subList(20, 30), x.get(19), null)});
    compare.run();
    apply.accept("d", new KvEvent[] {stored(prompts.get(2), null, "cpu")});
    apply.accept("d", new KvEvent[] {stored(prompts.get(3).subList(20, 30), x.get(19), null)});
    compare.run();
    // Blocks under a parent no one holds yet: their positions are unknown.
    apply.accept("b", new KvEvent[] {stored(w, 4999L, null)});
    compare.run();
    apply.accept("a", new KvEvent[] {stored(List.of(4999L), x.get(39), null)});
    apply.accept("b", new KvEvent[] {stored(List.of(4999L), x.get(39), null)});
    compare.run();
    apply.accept("b", new KvEvent[] {removed(w, null), removed(x.subList(30, 35), null)});
    compare.run();
    for (PrefixIndex i : both) {
      Lease token = leases.get(i).get("a");
      assertThat(i.purge(StreamId.of(MODEL, "a"), token, PurgeMode.KEEP_WATERMARK))
          .isEqualTo(PurgeStatus.PURGED);
    }
    compare.run();
    IndexFixtures.collectAllGarbage(index);
    compare.run();
    apply.accept("c", new KvEvent[] {cleared(), stored(x.subList(0, 33), null, null)});
    apply.accept("b", new KvEvent[] {stored(w, 4999L, "cpu")});
    compare.run();
    IndexFixtures.collectAllGarbage(index);
    compare.run();
  }

  static org.assertj.core.data.Offset<Double> within() {
    return org.assertj.core.data.Offset.offset(1e-9);
  }
}
