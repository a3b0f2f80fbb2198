package io.kvindex.chaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.demo.Fleet;
import io.kvindex.demo.RouterClient;
import io.kvindex.demo.Stack;
import io.kvindex.demo.Workloads;
import io.kvindex.event.KvEventBatch;
import io.kvindex.hash.BlockHasher;
import io.kvindex.hash.HashAlgorithm;
import io.kvindex.index.StreamId;
import io.kvindex.index.StreamWrites;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.SimulatedPod;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;

/**
 * Checks router answers against the pods' ground truth continuously, during and after a fault: a
 * thread asks a router to score a prompt sampled from the run and compares each pod's matched depth
 * with what the pod held.
 *
 * <p>The truth is taken from two sources. Every batch an engine publishes is handed to the auditor
 * as it is published (a listener on the engine): when each block was stored and removed, and in
 * which batch, exact to the batch, however briefly it was held. Periodic looks at what each pod
 * holds (every {@code lookEvery}, and after each answer) add what no batch says: blocks dropped
 * silently (a reset or sleep whose AllBlocksCleared waits for the engine's next step, a restart,
 * silent eviction). A look never overrules a batch published after it began. Looks alone, 300 ms
 * apart on a loaded host, missed blocks held between two of them, and counted a router crediting
 * one (rightly, within the grace) as a false positive "(its removal applied)".
 *
 * <p>Events take a moment to travel from an engine to the index, so the truth is read with a grace
 * period: a router may credit a pod with a block it stopped holding less than {@code grace} ago,
 * and need not credit it with one it has held for less than that. Past the grace, a depth above the
 * blocks the pod held is a <b>false positive</b> (the gateway would send the request to a pod whose
 * cache is colder than the index says) and one below is a <b>false negative</b>. A false positive
 * is counted apart when the index had not yet applied the batch that carries the block's removal
 * (for a block dropped silently, the batch the engine publishes next): ingest lag past the grace,
 * not a wrong index. An answer of "index unavailable" is counted apart: the gateway then balances
 * by load, which is neither.
 *
 * <p>The truth starts when the auditor is made (its listeners) and at its first look: what a pod
 * dropped before is unknown. A lookup whose grace reaches back before the first look may credit a
 * block the auditor never saw (the pod may have dropped it within the grace), so such a block is
 * not counted against it; a block never seen whose removal the index has not applied at all is
 * ingest lag like any other. To leave nothing unknown, {@link #watch} looks from before the load
 * starts and {@link #start} begins the checks later. Thread-safe: one auditor thread, its figures
 * read under its lock; the engines' threads only queue what they publish.
 */
final class ChaosAuditor implements AutoCloseable {
  private static final long TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
  private static final int LOOKUPS_PER_TICK = 2;

  private final Fleet fleet;
  private final StreamWrites index;
  private final RouterClient routers;
  private final List<InferenceRequest> prompts;
  private final List<String> pods;
  private final long graceNanos;
  private final Random random;
  private final BlockHasher hasher =
      BlockHasher.create(HashAlgorithm.SHA256_CBOR, Stack.HASH_SEED, Workloads.BLOCK_SIZE);
  private final long lookEveryNanos;

  /** What the auditor knows of each pod's cache; the auditor's thread only. */
  private final Map<String, PodTruth> truth = new HashMap<>();

  /** Batches the engines published, queued by their threads, taken in by the auditor's. */
  private final Queue<Published> published = new ConcurrentLinkedQueue<>();

  private long lastSnapshot = -1;

  /** When the first look was taken (-1 before): the truth before it is unknown. */
  private volatile long firstSnapshot = -1;

  /**
   * Per pod, the engine's next sequence at the first look: a block never seen held that a pod held
   * before went with a batch published before it.
   */
  private final Map<String, Long> publishedBeforeFirst = new HashMap<>();

  /** A batch an engine published, as its listener saw it. */
  record Published(String pod, Instant start, long seq, long atNanos, KvEventBatch batch) {}

  /** Takes in the batches the engines published since the last time ({@link PodTruth#takeIn}). */
  private void takeIn() {
    for (Published p; (p = published.poll()) != null; ) {
      truth.get(p.pod()).takeIn(p);
    }
  }

  private volatile boolean checking;
  private boolean threadStarted;
  private final Thread thread;
  private volatile boolean running = true;

  // Guarded by this.
  private long checks;
  private long falsePositives;
  private long falseNegatives;
  private long unavailable;
  private long failedAsks;
  private long faultStart = -1;
  private long faultEnd = -1;
  private long fpSince = -1;
  private long longestFpNanos;
  private long lastFp = -1;
  private long lastWrong = -1;
  private long fpDuringFault;
  private long fpBehind;
  private long fpAfterFault;
  private String firstFalsePositive;
  private long maxAskNanos;
  private long longestSnapshotGap;

  ChaosAuditor(
      Fleet fleet,
      StreamWrites index,
      RouterClient routers,
      List<InferenceRequest> prompts,
      Duration grace,
      long seed) {
    this(fleet, index, routers, prompts, grace, seed, Duration.ofNanos(TICK_NANOS));
  }

  /**
   * @param lookEvery how often the auditor's thread looks at what every pod holds, besides after
   *     each answer it checks
   */
  ChaosAuditor(
      Fleet fleet,
      StreamWrites index,
      RouterClient routers,
      List<InferenceRequest> prompts,
      Duration grace,
      long seed,
      Duration lookEvery) {
    this.fleet = fleet;
    this.index = index;
    this.routers = routers;
    this.prompts = List.copyOf(prompts);
    this.pods = fleet.names();
    this.graceNanos = grace.toNanos();
    this.lookEveryNanos = lookEvery.toNanos();
    this.random = new Random(seed);
    for (String pod : pods) {
      truth.put(pod, new PodTruth());
      SimulatedPod engine = fleet.pod(pod);
      engine.addBatchListener(
          0,
          (seq, batch, payload) -> {
            if (running) {
              published.add(
                  new Published(pod, engine.processStartTime(), seq, System.nanoTime(), batch));
            }
          });
    }
    this.thread = new Thread(this::loop, "chaos-auditor");
    this.thread.setDaemon(true);
  }

  /**
   * Starts taking snapshots of the pods' truth, without checking lookups yet: called before the
   * load starts, it leaves no block a pod held unseen.
   */
  synchronized void watch() {
    if (!threadStarted) {
      threadStarted = true;
      thread.start();
    }
  }

  /** Whether the first snapshot has been taken. */
  boolean watching() {
    return firstSnapshot >= 0;
  }

  /** Starts checking lookups (and taking snapshots, unless {@link #watch} did already). */
  void start() {
    checking = true;
    watch();
  }

  synchronized void faultStarted() {
    faultStart = System.nanoTime();
  }

  synchronized void faultEnded() {
    faultEnd = System.nanoTime();
  }

  private void loop() {
    while (running) {
      long start = System.nanoTime();
      if (lastSnapshot < 0 || start - lastSnapshot >= lookEveryNanos) {
        snapshot();
      } else {
        takeIn();
      }
      for (int i = 0; i < LOOKUPS_PER_TICK && running && checking; i++) {
        check(prompts.get(random.nextInt(prompts.size())));
      }
      long rest = TICK_NANOS - (System.nanoTime() - start);
      if (rest > 0) {
        try {
          TimeUnit.NANOSECONDS.sleep(rest);
        } catch (InterruptedException e) {
          return;
        }
      }
    }
  }

  /**
   * Takes in the published batches, then looks at what each pod holds now, for what no batch says:
   * a block seen held was held until this look, and one no longer held (dropped silently, or its
   * removal not published yet) was held until this look at the latest, its removal in the batch the
   * engine publishes next. A block a batch published after the look began changed is left to the
   * batches; so is a pod whose engine restarted since.
   */
  private void snapshot() {
    long now = System.nanoTime();
    if (lastSnapshot >= 0) {
      synchronized (this) {
        longestSnapshotGap = Math.max(longestSnapshotGap, now - lastSnapshot);
      }
    }
    lastSnapshot = now;
    boolean firstLook = firstSnapshot < 0;
    if (firstLook) {
      firstSnapshot = now;
    }
    for (String pod : pods) {
      SimulatedPod engine = fleet.pod(pod);
      Instant start = engine.processStartTime();
      long before = engine.nextSequence(0);
      Set<Long> held = fleet.held(pod);
      takeIn();
      if (firstLook) {
        publishedBeforeFirst.put(pod, before);
      }
      truth.get(pod).look(start, before, held, now);
    }
  }

  /**
   * Asks a router, then reads the truth again: a block stored (and indexed) while the question was
   * on its way is then seen held, so it never counts as a false positive.
   */
  private void check(InferenceRequest request) {
    long[] keys = hasher.blockHashes(request.promptTokens());
    JsonNode answer;
    long asked = System.nanoTime();
    try {
      answer = routers.score(request.promptTokens(), pods, null);
    } catch (IOException e) {
      synchronized (this) {
        failedAsks++;
      }
      return;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      running = false;
      return;
    }
    long answered = System.nanoTime();
    snapshot();
    long truthAt = asked;
    synchronized (this) {
      maxAskNanos = Math.max(maxAskNanos, answered - asked);
      if (!answer.path("index_available").asBoolean(false)) {
        unavailable++;
        return;
      }
      checks++;
      boolean fp = false;
      boolean fpIndexed = false; // some pod's removal was applied, and still credited
      boolean fn = false;
      for (String pod : pods) {
        int depth = answer.path("pods").path(pod).path("matched_blocks").asInt(0);
        // A grace reaching back before the first snapshot: a block never seen may have gone then.
        boolean unseenMayHold = truthAt - graceNanos < firstSnapshot;
        PodTruth t = truth.get(pod);
        int mayHold = PodTruth.mayHoldDepth(keys, t.lastHeld, truthAt - graceNanos, unseenMayHold);
        int mustHold = PodTruth.mustHoldDepth(keys, t.firstHeld, truthAt - graceNanos);
        if (depth > mayHold) {
          fp = true;
          boolean behind = ingestBehind(pod, keys[mayHold]);
          fpIndexed |= !behind;
          if (firstFalsePositive == null) {
            firstFalsePositive =
                pod
                    + ": the router said "
                    + depth
                    + " blocks, the pod held "
                    + mayHold
                    + (behind ? " (its removal not yet applied)" : " (its removal applied)");
          }
        } else if (depth < mustHold) {
          fn = true;
        }
      }
      if (fp) {
        falsePositives++;
        if (!fpIndexed) {
          fpBehind++;
        }
        lastFp = answered;
        if (fpSince < 0) {
          fpSince = asked;
        }
        longestFpNanos = Math.max(longestFpNanos, answered - fpSince);
        if (faultStart >= 0 && faultEnd < 0) {
          fpDuringFault++;
        } else if (faultEnd >= 0) {
          fpAfterFault++;
        }
      } else {
        fpSince = -1;
      }
      if (fn) {
        falseNegatives++;
      }
      if (fp || fn) {
        lastWrong = answered;
      }
    }
  }

  /**
   * Whether the index had not yet applied the batch that carries the block's removal (for a block
   * dropped silently, the one the engine published next after a look first saw it gone; for a block
   * never seen held, one published by the first look), so its removal is still on its way: ingest
   * lag, not a wrong index. Reads the stream's watermark, at most once per false positive.
   */
  private boolean ingestBehind(String pod, long block) {
    Long publishedBefore = truth.get(pod).goneBefore.get(block);
    if (publishedBefore == null) {
      publishedBefore = publishedBeforeFirst.get(pod);
    }
    if (publishedBefore == null) {
      return false;
    }
    try {
      long watermark = index.watermark(new StreamId(Workloads.MODEL, pod, 0)).orElse(-1);
      return watermark < publishedBefore;
    } catch (RuntimeException e) {
      return false;
    }
  }

  /** Stops the checks (the figures stay readable). */
  @Override
  public void close() {
    running = false;
    try {
      thread.join(TimeUnit.SECONDS.toMillis(10));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  synchronized void writeTo(ObjectNode out) {
    out.put("lookups_checked", checks);
    out.put("false_positives", falsePositives);
    out.put("false_negatives", falseNegatives);
    out.put("false_positives_during_fault", fpDuringFault);
    out.put("false_positives_while_ingest_behind", fpBehind);
    out.put("false_positives_after_fault", fpAfterFault);
    out.put("longest_false_positive_window_ms", TimeUnit.NANOSECONDS.toMillis(longestFpNanos));
    out.put(
        "last_false_positive_after_fault_end_ms",
        lastFp >= 0 && faultEnd >= 0 && lastFp > faultEnd
            ? TimeUnit.NANOSECONDS.toMillis(lastFp - faultEnd)
            : 0);
    out.put(
        "accurate_again_after_fault_end_ms",
        lastWrong >= 0 && faultEnd >= 0 && lastWrong > faultEnd
            ? TimeUnit.NANOSECONDS.toMillis(lastWrong - faultEnd)
            : 0);
    out.put("lookups_unavailable", unavailable);
    out.put("lookups_failed", failedAsks);
    out.put("slowest_router_answer_ms", TimeUnit.NANOSECONDS.toMillis(maxAskNanos));
    out.put("longest_truth_snapshot_gap_ms", TimeUnit.NANOSECONDS.toMillis(longestSnapshotGap));
    if (firstFalsePositive != null) {
      out.put("first_false_positive", firstFalsePositive);
    }
  }
}
