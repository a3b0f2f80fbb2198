package io.kvindex.ingester;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.event.KvEventBatch;
import io.kvindex.hash.BlockHashInputs;
import io.kvindex.hash.BlockHasher;
import io.kvindex.hash.HashAlgorithm;
import io.kvindex.index.InferenceHandover;
import io.kvindex.index.IngestLag;
import io.kvindex.index.KeyMode;
import io.kvindex.index.StreamId;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.ingester.discovery.PodSpecs;
import io.kvindex.ingester.stream.StreamStatus;
import io.kvindex.inspect.IndexReport;
import io.kvindex.inspect.RedisInspector;
import io.kvindex.simulator.Completion;
import io.kvindex.simulator.HashMode;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.ModelKind;
import io.kvindex.simulator.SimulatedPod;
import io.kvindex.simulator.http.PodHttpServer;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.kvindex.wire.KvEventEncoder;
import io.kvindex.wire.WireEra;
import io.micrometer.core.instrument.DistributionSummary;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** One ingester against simulated pods on loopback and a real Redis. */
@UsesRedis
class IngesterTest {
  private static final Duration WAIT = Duration.ofSeconds(20);

  /** Longer than the quiet spell of the reconnect test, short enough to rescue a deaf socket. */
  private static final Duration LONG_QUIET = Duration.ofSeconds(6);

  private Rig rig;
  private Fleet fleet;

  @BeforeEach
  void setUp(RedisStandalone redis, TestInfo test) {
    org.slf4j.LoggerFactory.getLogger(IngesterTest.class).info("=== {}", test.getDisplayName());
    rig = new Rig(redis);
  }

  @AfterEach
  void tearDown() {
    rig.close();
    if (fleet != null) {
      fleet.close();
    }
  }

  private Ingester startOwningAll() {
    Ingester ingester = rig.start("r1", fleet.specs("engine"));
    Await.until(WAIT, "every stream owned", () -> running(ingester) == fleet.pods().size());
    fleet.pods().forEach(p -> rig.warmUp(fleet, p));
    return ingester;
  }

  private static long running(Ingester i) {
    return i.workers().values().stream()
        .filter(w -> w.status().state() == StreamStatus.State.RUNNING)
        .count();
  }

  private void awaitEqual(SimulatedPod pod) {
    rig.awaitCaughtUp(pod, WAIT);
    rig.awaitEqual(pod, fleet.everHeld(), WAIT);
  }

  /** Serves requests on the replaced pod until the ingester has counted an engine restart. */
  private void awaitRestartSeen(Ingester ingester, SimulatedPod fresh) {
    Await.until(
        WAIT,
        "the restart seen",
        () -> {
          fleet.traffic(fresh, 1);
          return ingester.metrics().total("kvindex.ingester.engine.restarts") >= 1;
        });
  }

  @Test
  void ingest_indexEqualsGroundTruth() {
    fleet = Fleet.start(2);
    Ingester ingester = startOwningAll();
    fleet.traffic(40);
    fleet.pods().forEach(this::awaitEqual);
    assertThat(ingester.metrics().value("kvindex.ingester.blocks", "type", "stored")).isPositive();
    assertThat(ingester.metrics().value("kvindex.ingester.blocks", "type", "removed")).isPositive();
    assertThat(ingester.metrics().lag().count()).isPositive();
    String page = ingester.meterRegistry().scrape();
    org.slf4j.LoggerFactory.getLogger(IngesterTest.class).debug("/metrics:\n{}", page);
    assertThat(page)
        .contains("kvindex_ingester_lag_seconds_bucket")
        .contains("kvindex_ingester_events_total{type=\"BlockStored\"}")
        .contains("kvindex_ingester_watermark{model=\"sim-model\",pod=\"pod-0\",rank=\"0\"}")
        .contains("kvindex_ingester_leases_held 2.0")
        .contains("kvindex_ingester_leases_moved_total{how=\"acquired\"} 2.0");
  }

  /**
   * A stream behind its engine (its writer frozen while the engine goes on publishing) applies the
   * backlog several batches per call, and the index still equals the engine's cache.
   */
  @Test
  void backlog_isAppliedSeveralBatchesPerCall() {
    fleet = Fleet.start(1);
    Ingester ingester = startOwningAll();
    rig.gate(ingester)
        .close(); // frozen before its next write: what the pod publishes waits in the socket
    fleet.traffic(40);
    rig.gate(ingester).open();
    awaitEqual(fleet.pod(0));

    DistributionSummary calls =
        ingester.meterRegistry().find("kvindex.ingester.apply.batches").summary();
    double applied = ingester.metrics().value("kvindex.ingester.batches", "outcome", "applied");
    assertThat(calls.max()).as("batches in the largest call").isGreaterThan(1);
    assertThat(calls.totalAmount()).isEqualTo(applied);
    assertThat((double) calls.count()).as("apply calls").isLessThan(applied);
    assertThat(ingester.metrics().total("kvindex.ingester.gaps")).isZero();
    assertThat(ingester.meterRegistry().scrape()).contains("kvindex_ingester_apply_batches_count");
  }

  @Test
  void allBlocksCleared_purgesOnceAndOnlyThatPod() {
    fleet = Fleet.start(2);
    Ingester ingester = startOwningAll();
    fleet.traffic(20);
    fleet.pods().forEach(this::awaitEqual);
    Set<Long> otherBefore = new HashSet<>(fleet.pod(1).cachedBlocks(0, "GPU"));

    fleet.pod(0).faults().duplicateFraction(1.0);
    fleet.pod(0).resetPrefixCache();
    fleet.traffic(fleet.pod(0), 1); // the clear goes out with this step, twice
    fleet.pod(0).faults().clear();
    fleet.traffic(fleet.pod(0), 2);

    fleet.pods().forEach(this::awaitEqual);
    assertThat(rig.held("pod-1", otherBefore)).isEqualTo(otherBefore);
    assertThat(ingester.metrics().value("kvindex.ingester.purges", "reason", "all_blocks_cleared"))
        .isEqualTo(1.0);
    assertThat(ingester.metrics().total("kvindex.ingester.batches.duplicate.live")).isPositive();
  }

  /**
   * A prefix-cache reset of an engine that serves nothing publishes nothing: vLLM sends the
   * AllBlocksCleared with its next scheduler step, and an idle engine runs none. The index keeps
   * listing what the engine held (false positives) and no scrape shows the reset, while another
   * engine's sleep, which only its /metrics shows, is purged meanwhile. The false positives end
   * with the engine's next request, whose first step publishes the clear ahead of its own stores:
   * that request is the one they over-predict, and the one after it is predicted exactly.
   */
  @Test
  void prefixCacheResetWhileIdle_listedUntilTheEnginesNextRequest() {
    fleet = Fleet.start(2);
    Ingester ingester = startOwningAll();
    SimulatedPod idle = fleet.pod(0);
    Random random = new Random(11);
    int[] history = tokens(random, 4 * Fleet.BLOCK);
    fleet.traffic(10);
    fleet.serve(idle, 0, turn(history, random));
    fleet.pods().forEach(this::awaitEqual);
    Set<Long> held = new HashSet<>(idle.cachedBlocks(0, "GPU"));
    Set<Long> sleeping = new HashSet<>(fleet.pod(1).cachedBlocks(0, "GPU"));
    long published = idle.nextSequence(0);

    idle.resetPrefixCache();
    fleet.pod(1).sleep(1);
    Await.until(WAIT, "the sleeping pod purged", () -> rig.held("pod-1", sleeping).isEmpty());

    assertThat(idle.cachedBlocks(0, "GPU")).isEmpty();
    assertThat(idle.nextSequence(0)).as("batches published since the reset").isEqualTo(published);
    assertThat(rig.held("pod-0", held)).as("listed while the engine is idle").isEqualTo(held);
    assertThat(clears(ingester)).isZero();

    InferenceRequest next = turn(history, random);
    int predicted = predictedBlocks(idle, next);
    Completion served = fleet.serve(idle, 0, next);
    assertThat(predicted).as("the index's prediction for the next request").isEqualTo(4);
    assertThat(served.cachedTokens()).as("what the engine had of it").isZero();

    awaitEqual(idle);
    assertThat(clears(ingester)).isEqualTo(1.0);
    InferenceRequest after = turn(history, random);
    assertThat(predictedBlocks(idle, after))
        .as("the request after it")
        .isEqualTo(fleet.serve(idle, 0, after).cachedTokens() / Fleet.BLOCK)
        .isEqualTo(4);
  }

  /** A new turn of a conversation: its history, then 8 new tokens (part of a block). */
  private static InferenceRequest turn(int[] history, Random random) {
    return InferenceRequest.of(concat(history, tokens(random, 8)), tokens(random, 4));
  }

  private int predictedBlocks(SimulatedPod pod, InferenceRequest request) {
    List<Long> keys = Arrays.stream(keys(request)).boxed().toList();
    return Rig.depth(rig.index(), KeyMode.ENGINE, pod.name(), keys);
  }

  private static double clears(Ingester ingester) {
    return ingester.metrics().value("kvindex.ingester.purges", "reason", "all_blocks_cleared");
  }

  @Test
  void gap_isRepairedByReplay() {
    fleet = Fleet.start(1);
    Ingester ingester = startOwningAll();
    fleet.pod(0).faults().dropFraction(0.4);
    fleet.traffic(30);
    fleet.pod(0).faults().clear();
    fleet.traffic(2);

    awaitEqual(fleet.pod(0));
    assertThat(ingester.metrics().total("kvindex.ingester.gaps")).isPositive();
    assertThat(ingester.metrics().value("kvindex.ingester.replays", "outcome", "covered"))
        .isPositive();
    assertThat(ingester.metrics().total("kvindex.ingester.purges")).isZero();
  }

  @Test
  void gapBeyondRing_purgesThenIndexHoldsNothingStale() {
    fleet = Fleet.start(1, 7, b -> b.replayBufferSteps(3));
    Ingester ingester = startOwningAll();
    fleet.pod(0).resetPrefixCache(); // whatever the warm-up lost beyond the tiny ring is cleared
    fleet.traffic(10);
    awaitEqual(fleet.pod(0));
    // The warm-up may itself have met a gap beyond the tiny ring (the subscription's slow join):
    // count from here.
    double purgesBefore =
        ingester.metrics().value("kvindex.ingester.purges", "reason", "gap_beyond_ring");
    double beyondBefore =
        ingester.metrics().value("kvindex.ingester.replays", "outcome", "beyond_ring");

    fleet.pod(0).faults().silenced(true);
    fleet.traffic(15);
    fleet.pod(0).faults().silenced(false);
    Set<Long> before = new HashSet<>(fleet.pod(0).cachedBlocks(0, "GPU"));
    fleet.traffic(1);
    rig.awaitCaughtUp(fleet.pod(0), WAIT);

    Set<Long> truth = fleet.pod(0).cachedBlocks(0, "GPU");
    Set<Long> stale = new HashSet<>(fleet.everHeld());
    stale.removeAll(truth);
    assertThat(rig.held("pod-0", stale)).as("entries the pod no longer holds").isEmpty();
    Set<Long> fresh = new HashSet<>(truth);
    fresh.removeAll(before);
    assertThat(rig.held("pod-0", fresh)).as("blocks stored after the gap").isEqualTo(fresh);
    assertThat(ingester.metrics().value("kvindex.ingester.purges", "reason", "gap_beyond_ring"))
        .isEqualTo(purgesBefore + 1);
    assertThat(ingester.metrics().value("kvindex.ingester.replays", "outcome", "beyond_ring"))
        .isEqualTo(beyondBefore + 1);
  }

  /** The prompt's block keys, as the pods hash them. */
  private static long[] keys(InferenceRequest request) {
    int[] prompt = request.promptTokens();
    int full = prompt.length / Fleet.BLOCK * Fleet.BLOCK;
    return HASHER.blockHashes(Arrays.copyOf(prompt, full), BlockHashInputs.none());
  }

  /**
   * Serves {@code n} requests of growing conversations on the pod as a gateway with a router would:
   * looks each one up first, then records the engine's answer against that prediction (a touch), as
   * the closed loop does. Each request continues one of 12 conversations (its history, then a new
   * turn), so a conversation that waited long finds its tail evicted. Returns how many were
   * over-predicted (the index listed blocks the engine no longer held).
   */
  private int conversations(SimulatedPod pod, List<int[]> histories, Random random, int n) {
    int over = 0;
    for (int i = 0; i < n; i++) {
      int c = random.nextInt(histories.size());
      int[] turn = tokens(random, Fleet.BLOCK + random.nextInt(2 * Fleet.BLOCK));
      int[] prompt = concat(histories.get(c), turn);
      InferenceRequest request = InferenceRequest.of(prompt, tokens(random, 8));
      long[] keys = keys(request);
      rig.awaitCaughtUp(pod, WAIT); // the prediction is the index's once it has the engine's events
      List<Long> asList = Arrays.stream(keys).boxed().toList();
      int predicted = Rig.depth(rig.index(), KeyMode.ENGINE, pod.name(), asList);
      Completion done = fleet.serve(pod, 0, request);
      int reportable = (prompt.length - 1) / Fleet.BLOCK;
      int error =
          Math.min(predicted, reportable) - Math.min(done.cachedTokens() / Fleet.BLOCK, reportable);
      over += error > 0 ? 1 : 0;
      int cached = Math.min(done.cachedTokens() / Fleet.BLOCK, reportable);
      rig.index()
          .touchAsync(Fleet.MODEL, pod.name(), 0, keys, error, cached, Duration.ofMinutes(1))
          .join();
      histories.set(c, prompt.length > 20 * Fleet.BLOCK ? tokens(random, Fleet.BLOCK) : prompt);
    }
    return over;
  }

  private static int[] tokens(Random random, int n) {
    int[] t = new int[n];
    for (int i = 0; i < n; i++) {
      t[i] = random.nextInt(32_000);
    }
    return t;
  }

  private static int[] concat(int[] a, int[] b) {
    int[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  private static final BlockHasher HASHER =
      BlockHasher.create(HashAlgorithm.SHA256_CBOR, "0", Fleet.BLOCK);

  private static double inferring(Ingester ingester) {
    return ingester.meterRegistry().get("kvindex.ingester.streams.inferred").gauge().value();
  }

  /**
   * An engine that evicts without publishing: the index keeps listing what it evicted, so requests
   * are over-predicted; a resync request (a router found the pod over-predicted) makes the stream
   * infer the evictions from the engine's capacity, its ring and the requests routers observe,
   * without purging anything, after which predictions are exact again; a new owner of the stream
   * goes on inferring.
   */
  @Test
  void silentEviction_resyncRequest_evictionsInferredAndPredictionsExactAgain() {
    fleet = Fleet.start(1);
    Ingester ingester = startOwningAll();
    SimulatedPod pod = fleet.pod(0);
    Random random = new Random(5);
    List<int[]> histories = new ArrayList<>();
    for (int c = 0; c < 12; c++) {
      histories.add(tokens(random, Fleet.BLOCK));
    }
    pod.faults().silentEviction(true);
    conversations(pod, histories, random, 40);
    int overBefore = conversations(pod, histories, random, 60);
    Await.until(
        WAIT,
        "the engine's capacity scraped",
        () -> ingester.workers().values().iterator().next().status().capacityBlocks() == 96);

    rig.index()
        .requestResyncAsync(Fleet.MODEL, pod.name(), "test: over-predicted", Duration.ofMinutes(1))
        .join();
    Await.until(WAIT, "the stream infers evictions", () -> inferring(ingester) == 1);
    conversations(pod, histories, random, 40);
    int overAfter = conversations(pod, histories, random, 60);
    rig.awaitCaughtUp(pod, WAIT);
    IndexReport report = RedisInspector.of(rig.connector(), Rig.INDEX).read(null, null);
    org.slf4j.LoggerFactory.getLogger(IngesterTest.class)
        .info("over-predicted in 60 requests: {} before, {} while inferred", overBefore, overAfter);

    assertThat(overBefore).as("over-predicted, evictions unpublished").isGreaterThan(10);
    assertThat(overAfter).as("over-predicted, evictions inferred").isLessThan(overBefore / 4);
    assertThat(report.groupReports().get(0).unlocatedBlocks())
        .as("blocks stored where the index cannot place them")
        .isZero();
    assertThat(ingester.metrics().value("kvindex.ingester.inference.starts", "why", "resync"))
        .isEqualTo(1.0);
    assertThat(ingester.metrics().total("kvindex.ingester.purges")).as("nothing purged").isZero();
    assertThat(ingester.metrics().value("kvindex.ingester.inferred.blocks", "change", "evicted"))
        .isPositive();
    assertThat(ingester.metrics().total("kvindex.ingester.touches")).isPositive();

    StreamId stream = new StreamId(Fleet.MODEL, pod.name(), 0);
    Await.until(
        WAIT,
        "the model left for a next owner",
        () -> rig.index().inferenceHandover(stream).isPresent());
    ingester.close();
    // What the former owner left, as if its model had decided to evict a block the index lists and
    // stopped before the removal went out, at a size of its own.
    Set<Long> listed = rig.held(pod.name(), new HashSet<>(pod.cachedBlocks(0, "GPU")));
    long decided = listed.iterator().next();
    rig.index()
        .handOverInferenceAsync(
            stream, new InferenceHandover(50, new long[] {decided}), Duration.ofMinutes(1))
        .join();

    Ingester next = startOwningAll();
    Await.until(WAIT, "the new owner infers evictions", () -> inferring(next) == 1);
    assertThat(next.metrics().value("kvindex.ingester.inference.starts", "why", "takeover"))
        .isEqualTo(1.0);
    Await.until(
        WAIT,
        "the removal the former owner decided applied",
        () -> {
          fleet.traffic(pod, 1);
          rig.awaitCaughtUp(pod, WAIT);
          return rig.held(pod.name(), Set.of(decided)).isEmpty();
        });
    Await.until(
        WAIT,
        "the new owner's model left at the size it took over",
        () -> rig.index().inferenceHandover(stream).orElseThrow().sizeBlocks() == 50);
  }

  /**
   * A hybrid engine (full attention beside a sliding window) draws both groups' blocks from one
   * pool of {@code num_gpu_blocks}: the eviction model, which counts full-attention blocks, is
   * sized from the engine's {@code kv_cache_size_tokens} in those blocks, not from the whole pool
   * (a model of the pool never fills, and removes nothing).
   */
  @Test
  void hybridEngine_evictionModel_sizedFromKvCacheSizeTokens() {
    fleet = Fleet.start(1, 7, c -> c.modelKind(ModelKind.SLIDING_WINDOW));
    Ingester ingester = startOwningAll();
    SimulatedPod pod = fleet.pod(0);
    fleet.traffic(pod, 4);
    rig.awaitCaughtUp(pod, WAIT);
    long sizeTokens = PodHttpServer.kvCacheSizeTokens(pod.config());
    Await.until(
        WAIT,
        "the engine's capacity scraped",
        () ->
            ingester.workers().values().iterator().next().status().capacity().sizeTokens()
                == sizeTokens);

    rig.index()
        .requestResyncAsync(Fleet.MODEL, pod.name(), "test: over-predicted", Duration.ofMinutes(1))
        .join();
    Await.until(WAIT, "the stream infers evictions", () -> inferring(ingester) == 1);

    Await.until(
        WAIT,
        "the pod marked",
        () -> rig.index().evictionsInferredAsync(Fleet.MODEL, pod.name()).join().isPresent());
    int modelBlocks = rig.index().evictionsInferredAsync(Fleet.MODEL, pod.name()).join().getAsInt();
    assertThat(sizeTokens / Fleet.BLOCK)
        .as("full-attention blocks the engine holds")
        .isLessThan(96);
    assertThat(modelBlocks).isEqualTo((int) (sizeTokens / Fleet.BLOCK));
  }

  /** Starts inferring the pod's evictions, as a router's resync of an over-predicted pod does. */
  private void inferEvictions(Ingester ingester, SimulatedPod pod) {
    Await.until(
        WAIT,
        "the engine's capacity scraped",
        () -> ingester.workers().values().iterator().next().status().capacityBlocks() > 0);
    rig.index()
        .requestResyncAsync(Fleet.MODEL, pod.name(), "test: over-predicted", Duration.ofMinutes(1))
        .join();
    Await.until(WAIT, "the stream infers evictions", () -> inferring(ingester) == 1);
  }

  /**
   * A pod whose evictions are inferred takes observed requests from routers: an observation of a
   * prompt the pod never held (anyone may send one to a router's /observe) lists nothing under it,
   * whatever it claims the engine served from its cache.
   */
  @Test
  void touch_ofAPromptThePodNeverHeld_listsNothingUnderIt() {
    fleet = Fleet.start(1);
    Ingester ingester = startOwningAll();
    SimulatedPod pod = fleet.pod(0);
    pod.faults().silentEviction(true);
    fleet.traffic(pod, 20);
    inferEvictions(ingester, pod);
    Random random = new Random(11);
    long[] invented = new long[40];
    for (int i = 0; i < invented.length; i++) {
      invented[i] = random.nextLong();
    }
    Set<Long> inventedSet = new HashSet<>();
    Arrays.stream(invented).forEach(inventedSet::add);

    // Sent until the owner has read some (a touch sent before its first read is not read).
    Await.until(
        WAIT,
        "a touch read, then a batch applied",
        () -> {
          rig.index()
              .touchAsync(Fleet.MODEL, pod.name(), 0, invented, -40, 40, Duration.ofMinutes(1))
              .join();
          fleet.traffic(pod, 1);
          rig.awaitCaughtUp(pod, WAIT);
          return ingester.metrics().total("kvindex.ingester.touches") > 0;
        });
    fleet.traffic(pod, 2);
    rig.awaitCaughtUp(pod, WAIT);

    assertThat(rig.held(pod.name(), inventedSet)).as("blocks the engine never held").isEmpty();
    assertThat(ingester.metrics().value("kvindex.ingester.inferred.blocks", "change", "restored"))
        .isZero();
  }

  /**
   * A stream whose evictions are inferred and that falls behind its engine for good (here its
   * writes are frozen while its engine publishes 2 s of batches, with a limit of 0.5 s) says so and
   * stops inferring, then goes on applying what its engine publishes.
   */
  @Test
  void inferring_streamThatCannotKeepUp_saysSoAndStopsInferring() {
    AtomicReference<Instant> engineNow = new AtomicReference<>(Instant.now());
    fleet = Fleet.start(1, 7, b -> b.clock(engineNow::get));
    Ingester ingester =
        rig.start("r1", fleet.specs("engine"), b -> b.inferenceLagLimit(Duration.ofMillis(500)));
    Await.until(WAIT, "every stream owned", () -> running(ingester) == 1);
    SimulatedPod pod = fleet.pod(0);
    rig.warmUp(fleet, pod);
    pod.faults().silentEviction(true);
    inferEvictions(ingester, pod);

    rig.gate(ingester).close();
    for (int i = 0; i < 20; i++) {
      engineNow.set(engineNow.get().plusMillis(100));
      fleet.traffic(pod, 1);
    }
    rig.gate(ingester).open();

    Await.until(
        WAIT,
        "the stream stops inferring",
        () -> ingester.metrics().value("kvindex.ingester.inference.stops", "why", "behind") == 1);
    assertThat(inferring(ingester)).isZero();
    fleet.traffic(pod, 2);
    rig.awaitCaughtUp(pod, WAIT);
  }

  /**
   * The owner of a stream reports in the index how far behind its engine it is, every second: a
   * frozen owner stops reporting (routers read its old report as behind), and once it has caught up
   * its report is fresh and shows no lag.
   */
  @Test
  void lagReport_freshWhileTheStreamKeepsUp_staleWhileItsOwnerIsStuck() {
    fleet = Fleet.start(1);
    Ingester ingester = startOwningAll();
    SimulatedPod pod = fleet.pod(0);
    fleet.traffic(pod, 5);
    rig.awaitCaughtUp(pod, WAIT);
    Await.until(WAIT, "a fresh report of no lag", () -> keepsUp(pod));

    rig.gate(ingester).close();
    fleet.traffic(pod, 5);
    Await.until(
        WAIT,
        "the report grows old",
        () ->
            rig.index().ingestLagAsync(Fleet.MODEL, pod.name()).join().stream()
                .allMatch(l -> l.age().compareTo(Duration.ofSeconds(3)) >= 0));
    rig.gate(ingester).open();
    rig.awaitCaughtUp(pod, WAIT);
    Await.until(WAIT, "a fresh report of no lag", () -> keepsUp(pod));
  }

  private boolean keepsUp(SimulatedPod pod) {
    List<IngestLag> lags = rig.index().ingestLagAsync(Fleet.MODEL, pod.name()).join();
    return lags.size() == 1
        && lags.get(0).age().compareTo(Duration.ofSeconds(2)) < 0
        && lags.get(0).lag().compareTo(Duration.ofSeconds(1)) < 0;
  }

  @Test
  void engineRestart_isDetectedAndPurged() {
    fleet = Fleet.start(1);
    Ingester ingester = startOwningAll();
    fleet.traffic(20);
    awaitEqual(fleet.pod(0));

    fleet.pod(0).restart();
    fleet.traffic(5);

    awaitEqual(fleet.pod(0));
    assertThat(ingester.metrics().total("kvindex.ingester.engine.restarts")).isEqualTo(1.0);
    assertThat(ingester.metrics().value("kvindex.ingester.purges", "reason", "engine_restart"))
        .isEqualTo(1.0);
  }

  @Test
  void engineRestartPastTheWatermark_isCaughtByItsStartTime() {
    fleet = Fleet.start(1);
    Ingester first = startOwningAll();
    fleet.traffic(5);
    awaitEqual(fleet.pod(0));
    Await.until(WAIT, "incarnation recorded", () -> rig.incarnationRecorded());
    long watermark = first.workers().values().iterator().next().status().applied();
    first.close();

    fleet.pod(0).restart(); // while nobody watches, and the new engine runs past the watermark
    while (fleet.pod(0).nextSequence(0) <= watermark + 3) {
      fleet.traffic(1);
    }
    Ingester second = rig.start("r2", fleet.specs("engine"));
    fleet.traffic(2);

    awaitEqual(fleet.pod(0));
    assertThat(second.metrics().total("kvindex.ingester.engine.restarts")).isEqualTo(1.0);
    assertThat(second.metrics().value("kvindex.ingester.purges", "reason", "engine_restart"))
        .isEqualTo(1.0);
  }

  /**
   * A data-parallel pod's engine restarts while nobody watches, and its ranks run past their
   * watermarks. The owner of rank 0 comes first and sees the new start time; rank 1's new owner,
   * which comes later, must still see it: what rank 0's owner recorded is not what rank 1's entries
   * came from.
   */
  @Test
  void engineRestartPastTheWatermark_isCaughtByEachRanksNewOwner() {
    fleet = Fleet.start(1, 5, b -> b.dataParallelSize(2));
    SimulatedPod pod = fleet.pod(0);
    Ingester first = rig.start("r1", fleet.specs("engine"));
    Await.until(WAIT, "both ranks owned", () -> running(first) == 2);
    long[] watermarks = new long[2];
    for (int rank = 0; rank < 2; rank++) {
      fleet.traffic(pod, 5, rank);
      rig.awaitCaughtUp(pod, rank, WAIT);
      rig.awaitEqual(pod, rank, fleet.everHeld(), WAIT);
      watermarks[rank] = pod.nextSequence(rank) - 1;
    }
    for (int rank = 0; rank < 2; rank++) {
      StreamId stream = new StreamId(Fleet.MODEL, pod.name(), rank);
      Await.until(
          WAIT,
          stream + "'s incarnation recorded",
          () -> rig.index().incarnation(stream).isPresent());
    }
    first.close();

    pod.restart(); // while nobody watches, and each rank's new engine runs past its watermark
    for (int rank = 0; rank < 2; rank++) {
      while (pod.nextSequence(rank) <= watermarks[rank] + 3) {
        fleet.traffic(pod, 1, rank);
      }
    }
    PodSpec spec = Fleet.spec(pod, "engine");
    Ingester rank0 = rig.start("r2", List.of(PodSpecs.withDpRanks(spec, List.of(0))));
    Await.until(
        WAIT,
        "rank 0's restart seen",
        () -> rank0.metrics().total("kvindex.ingester.engine.restarts") >= 1);
    rig.awaitEqual(pod, 0, fleet.everHeld(), WAIT);
    Ingester rank1 = rig.start("r3", List.of(PodSpecs.withDpRanks(spec, List.of(1))));
    fleet.traffic(pod, 2, 1);

    rig.awaitCaughtUp(pod, 1, WAIT);
    rig.awaitEqual(pod, 1, fleet.everHeld(), WAIT);
    assertThat(rank1.metrics().total("kvindex.ingester.engine.restarts")).isEqualTo(1.0);
  }

  @Test
  void podProcessReplaced_isReconnectedAndTreatedAsARestart() {
    fleet = Fleet.start(1);
    Ingester ingester = startOwningAll();
    fleet.traffic(10);
    awaitEqual(fleet.pod(0));

    SimulatedPod fresh = fleet.replace(0); // same endpoints, new process
    awaitRestartSeen(ingester, fresh);
    awaitEqual(fresh);
    assertThat(ingester.workers()).hasSize(1);
  }

  /**
   * A replaced engine whose new sequence numbers pass the watermark before the worker hears from it
   * (its first batches go out before the SUB socket has reconnected) is still seen as a restart:
   * the replay's copy of the last applied batch is not the batch applied.
   */
  @Test
  void podReplacedAndPastTheWatermarkUnheard_isTreatedAsARestart() {
    fleet = Fleet.start(1);
    Ingester ingester = startOwningAll();
    fleet.traffic(3);
    awaitEqual(fleet.pod(0));
    long watermark = ingester.workers().values().iterator().next().status().applied();

    SimulatedPod fresh = fleet.replace(0); // same endpoints, new process
    while (fresh.nextSequence(0) <= watermark + 5) {
      fleet.traffic(fresh, 1); // at once: before the live socket reconnects
    }
    awaitRestartSeen(ingester, fresh);
    awaitEqual(fresh);
  }

  /**
   * One pod's stream owned and caught up after some traffic, its live socket reconnecting {@code
   * min} to twice that after a drop, and no idle catch-up while a test runs.
   */
  private Ingester onePodReconnectingAfter(Duration min) {
    fleet = Fleet.start(1);
    Ingester ingester =
        rig.start(
            "r1",
            fleet.specs("engine"),
            c -> c.idleCatchUp(LONG_QUIET).reconnectMin(min).reconnectMax(min.multipliedBy(2)));
    Await.until(WAIT, "the stream owned", () -> running(ingester) == 1);
    rig.warmUp(fleet, fleet.pod(0));
    fleet.traffic(3);
    awaitEqual(fleet.pod(0));
    return ingester;
  }

  /**
   * A replaced engine whose first batch heard is exactly the next one expected (every batch before
   * it went out while the live socket was reconnecting) leaves no gap and no sequence going
   * backwards: the reconnect itself makes the worker compare the ring's copy of the last applied
   * batch. The idle catch-up comes later than the traffic resumes, so only the reconnect can tell.
   */
  @Test
  void podReplacedAndHeardFromTheNextSequence_isTreatedAsARestart() {
    // The live socket waits 1-2 s before it reconnects: the new process's first batches go unheard.
    Ingester ingester = onePodReconnectingAfter(Duration.ofSeconds(1));
    long watermark = ingester.workers().values().iterator().next().status().applied();

    SimulatedPod fresh = fleet.replace(0); // same endpoints, new process
    byte[] empty = KvEventEncoder.of(WireEra.V0_22).encode(KvEventBatch.of(1.0, List.of(), 0));
    while (fresh.nextSequence(0) <= watermark) {
      fresh.inject(0, empty); // up to the watermark exactly, unheard: the socket is reconnecting
    }
    LockSupport.parkNanos(Duration.ofSeconds(3).toNanos()); // the reconnect, with nothing sent
    awaitRestartSeen(ingester, fresh);
    awaitEqual(fresh);
  }

  /**
   * The same restart, with the other order of events: the live socket reconnects to the new process
   * before it published anything (its ring holds nothing to compare with the last applied batch),
   * and its batches up to the watermark go unheard. The check the reconnect owes is made again when
   * the first batch is heard, when the ring holds everything published before it.
   */
  @Test
  void podReplacedAndCheckedBeforeItPublished_isTreatedAsARestartWhenHeard() {
    Ingester ingester = onePodReconnectingAfter(Duration.ofMillis(100));
    long watermark = ingester.workers().values().iterator().next().status().applied();
    double checks = ingester.metrics().value("kvindex.ingester.replays", "outcome", "reconnect");

    SimulatedPod fresh = fleet.replace(0); // same endpoints, new process
    fresh.faults().silenced(true); // published into its ring, never heard live
    Await.until(
        WAIT,
        "the reconnect checked against an empty ring",
        () ->
            ingester.metrics().value("kvindex.ingester.replays", "outcome", "reconnect") > checks);
    byte[] empty = KvEventEncoder.of(WireEra.V0_22).encode(KvEventBatch.of(1.0, List.of(), 0));
    while (fresh.nextSequence(0) <= watermark) {
      fresh.inject(0, empty);
    }
    fresh.faults().silenced(false); // the first batch heard is the next one expected
    awaitRestartSeen(ingester, fresh);
    awaitEqual(fresh);
  }

  @Test
  void sleep_isDetectedThroughMetricsEndpoint() {
    fleet = Fleet.start(2);
    Ingester ingester = startOwningAll();
    fleet.traffic(20);
    fleet.pods().forEach(this::awaitEqual);
    Set<Long> held = new HashSet<>(fleet.pod(0).cachedBlocks(0, "GPU"));
    Set<Long> other = new HashSet<>(fleet.pod(1).cachedBlocks(0, "GPU"));

    fleet.pod(0).sleep(1); // no event until the next step: only /metrics tells

    Await.until(WAIT, "the sleeping pod purged", () -> rig.held("pod-0", held).isEmpty());
    assertThat(rig.held("pod-1", other)).isEqualTo(other);
    assertThat(ingester.metrics().value("kvindex.ingester.purges", "reason", "sleep"))
        .isEqualTo(1.0);

    fleet.pod(0).wakeUp();
    fleet.traffic(fleet.pod(0), 5);
    awaitEqual(fleet.pod(0));
  }

  @ParameterizedTest
  @ValueSource(strings = {"engine", "token"})
  void keyMode_indexEqualsGroundTruth(String mode) {
    fleet =
        Fleet.start(
            2, 11, b -> b.hashMode(mode.equals("engine") ? HashMode.ENGINE : HashMode.RANDOM));
    Ingester ingester = rig.start("r1", fleet.specs(mode));
    Await.until(WAIT, "every stream owned", () -> running(ingester) == 2);
    fleet.pods().forEach(p -> rig.warmUp(fleet, p));
    fleet.traffic(30);
    fleet.pod(1).resetPrefixCache();
    fleet.traffic(10);
    for (SimulatedPod pod : fleet.pods()) {
      rig.awaitCaughtUp(pod, WAIT);
      if (mode.equals("engine")) {
        rig.awaitEqual(pod, fleet.everHeld(), WAIT);
      } else {
        rig.awaitEqualInTokenMode(pod, fleet.everHeld(), WAIT);
      }
    }
  }

  @Test
  void dataParallelRanks_areSeparateStreams() {
    fleet = Fleet.start(1, 5, b -> b.dataParallelSize(2));
    Ingester ingester = rig.start("r1", fleet.specs("engine"));
    Await.until(WAIT, "both ranks owned", () -> running(ingester) == 2);
    SimulatedPod pod = fleet.pod(0);
    for (int rank = 0; rank < 2; rank++) {
      fleet.traffic(pod, 15, rank);
    }
    pod.resetPrefixCache();
    fleet.traffic(pod, 3, 1); // rank 1 publishes its clear; rank 0's waits for its next step
    for (int rank = 0; rank < 2; rank++) {
      rig.awaitCaughtUp(pod, rank, WAIT);
    }
    rig.awaitEqual(pod, 1, fleet.everHeld(), WAIT);
    Set<Long> rank0 = new HashSet<>(fleet.everHeld());
    rank0.removeAll(pod.cachedBlocks(1, "GPU"));
    assertThat(rig.held("pod-0", 0, rank0)).as("rank 0 untouched by rank 1's clear").isNotEmpty();
  }

  @Test
  void podRemovedFromDiscovery_isPurgedAndReleased() {
    fleet = Fleet.start(2);
    AtomicReference<List<PodSpec>> pods = new AtomicReference<>(fleet.specs("engine"));
    Ingester ingester = rig.start("r1", pods, b -> b);
    Await.until(WAIT, "both owned", () -> running(ingester) == 2);
    fleet.pods().forEach(p -> rig.warmUp(fleet, p));
    fleet.traffic(10);
    fleet.pods().forEach(this::awaitEqual);
    Set<Long> held = new HashSet<>(fleet.pod(0).cachedBlocks(0, "GPU"));

    pods.set(List.of(Fleet.spec(fleet.pod(1), "engine")));

    Await.until(WAIT, "pod-0 purged", () -> rig.held("pod-0", held).isEmpty());
    Await.until(WAIT, "pod-0 released", () -> ingester.workers().size() == 1);
    assertThat(ingester.metrics().value("kvindex.ingester.purges", "reason", "pod_removed"))
        .isEqualTo(1.0);
    awaitEqual(fleet.pod(1));
  }

  @Test
  void podGoneLongerThanRetention_recordsForgotten() {
    fleet = Fleet.start(2);
    AtomicReference<List<PodSpec>> pods = new AtomicReference<>(fleet.specs("engine"));
    Ingester ingester =
        rig.start(
            "r1",
            pods,
            b -> b.podLivenessTtl(Duration.ofSeconds(3)).departedRetention(Duration.ofMillis(300)));
    Await.until(WAIT, "both owned", () -> running(ingester) == 2);
    fleet.pods().forEach(p -> rig.warmUp(fleet, p));
    fleet.traffic(4);
    fleet.pods().forEach(this::awaitEqual);
    assertThat(rig.watermark("pod-0", 0)).isPresent();

    pods.set(List.of(Fleet.spec(fleet.pod(1), "engine")));

    Await.until(WAIT, "pod-0 forgotten", () -> rig.watermark("pod-0", 0).isEmpty());
    assertThat(rig.watermark("pod-1", 0)).as("a live pod is kept").isPresent();
  }

  @Test
  void podUnreachablePastTheBound_isPurged() {
    fleet = Fleet.start(2);
    Ingester ingester =
        rig.start("r1", fleet.specs("engine"), b -> b.unreachableAfter(Duration.ofMillis(500)));
    Await.until(WAIT, "both owned", () -> running(ingester) == 2);
    fleet.pods().forEach(p -> rig.warmUp(fleet, p));
    fleet.traffic(10);
    fleet.pods().forEach(this::awaitEqual);
    Set<Long> held = new HashSet<>(fleet.pod(0).cachedBlocks(0, "GPU"));

    fleet.pod(0).close(); // its /metrics stops answering

    Await.until(WAIT, "pod-0 purged", () -> rig.held("pod-0", held).isEmpty());
    assertThat(ingester.metrics().value("kvindex.ingester.purges", "reason", "unreachable"))
        .isEqualTo(1.0);
    awaitEqual(fleet.pod(1));
  }

  @Test
  void publisherConnectingOut_isReceivedOnBoundSocket() throws Exception {
    int port;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      port = s.getLocalPort();
    }
    String endpoint = "tcp://127.0.0.1:" + port;
    fleet = Fleet.start(1, 3, b -> b.publishConnect(endpoint));
    PodSpec spec =
        new PodSpec(
            "pod-0",
            Fleet.MODEL,
            endpoint,
            true,
            fleet.pod(0).endpoints().get(0).replay(),
            null,
            List.of(0),
            KeyMode.ENGINE,
            "");
    Ingester ingester = rig.start("r1", List.of(spec));
    Await.until(WAIT, "stream owned", () -> running(ingester) == 1);
    rig.warmUp(fleet, fleet.pod(0));
    fleet.traffic(10);
    awaitEqual(fleet.pod(0));
  }
}
