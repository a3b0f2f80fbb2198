package io.kvindex.demo;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.hash.BlockHasher;
import io.kvindex.hash.HashAlgorithm;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.simulator.InferenceRequest;
import java.io.IOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Checks router answers against the pods' ground truth continuously, during and after a fault: a
 * thread takes a snapshot of what every pod holds, then asks a router to score a prompt sampled
 * from the run and compares each pod's matched depth with the truth.
 *
 * <p>Events take a moment to travel from an engine to the index, so the truth is read with a grace
 * period: a router may credit a pod with a block it stopped holding less than {@code grace} ago,
 * and need not credit it with one it has held for less than that. Past the grace, a depth above the
 * blocks the pod held is a <b>false positive</b> (the gateway would send the request to a pod whose
 * cache is colder than the index says) and one below is a <b>false negative</b>. A false positive
 * is counted apart when the index had not yet applied the batches the engine had published when the
 * block was first seen gone (its removal still on its way: ingest lag past the grace, not a wrong
 * index). An answer of "index unavailable" is counted apart: the gateway then balances by load,
 * which is neither.
 *
 * <p>The truth starts at the auditor's first snapshot: what a pod dropped before it is unknown. A
 * lookup whose grace reaches back before that snapshot may credit a block the auditor never saw
 * (the pod may have dropped it within the grace), so such a block is not counted against it; a
 * block never seen whose removal the index has not applied at all is ingest lag like any other. To
 * leave nothing unknown, {@link #watch} takes snapshots from before the load starts and {@link
 * #start} begins the checks later. Thread-safe: one auditor thread, its figures read under its
 * lock.
 */
final class ChaosAuditor implements AutoCloseable {
  private static final long TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
  private static final int LOOKUPS_PER_TICK = 2;

  private final Fleet fleet;
  private final PrefixIndex index;
  private final RouterClient routers;
  private final List<InferenceRequest> prompts;
  private final List<String> pods;
  private final long graceNanos;
  private final Random random;
  private final BlockHasher hasher =
      BlockHasher.create(HashAlgorithm.SHA256_CBOR, Stack.HASH_SEED, Workloads.BLOCK_SIZE);
  private final Map<String, Map<Long, Long>> firstHeld = new HashMap<>();
  private final Map<String, Map<Long, Long>> lastHeld = new HashMap<>();
  private final Map<String, Set<Long>> gone = new HashMap<>();

  /** Per pod and block gone, the engine's next sequence when the block was first seen gone. */
  private final Map<String, Map<Long, Long>> goneBefore = new HashMap<>();

  private long lastSnapshot = -1;

  /** When the first snapshot was taken (-1 before): the truth before it is unknown. */
  private volatile long firstSnapshot = -1;

  /**
   * Per pod, the engine's next sequence at the first snapshot: a block never seen held that a pod
   * held before went with a batch published before it.
   */
  private final Map<String, Long> publishedBeforeFirst = new HashMap<>();

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
      PrefixIndex index,
      RouterClient routers,
      List<InferenceRequest> prompts,
      Duration grace,
      long seed) {
    this.fleet = fleet;
    this.index = index;
    this.routers = routers;
    this.prompts = List.copyOf(prompts);
    this.pods = fleet.names();
    this.graceNanos = grace.toNanos();
    this.random = new Random(seed);
    for (String pod : pods) {
      firstHeld.put(pod, new HashMap<>());
      lastHeld.put(pod, new HashMap<>());
      gone.put(pod, new HashSet<>());
      goneBefore.put(pod, new HashMap<>());
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
      snapshot();
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
   * Records when each pod was first seen holding each block, and until when it may have held it:
   * the last snapshot that saw it, or for a block gone since, the first snapshot that saw it gone
   * (it went at some moment between the two; a starved auditor thread taking snapshots far apart
   * must not turn that uncertainty into false positives).
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
      Set<Long> held = fleet.held(pod);
      Map<Long, Long> first = firstHeld.get(pod);
      Map<Long, Long> last = lastHeld.get(pod);
      Set<Long> goneSeen = gone.get(pod);
      Map<Long, Long> sequence = goneBefore.get(pod);
      long published = fleet.pod(pod).nextSequence(0);
      if (firstLook) {
        publishedBeforeFirst.put(pod, published);
      }
      first.keySet().retainAll(held);
      for (Map.Entry<Long, Long> e : last.entrySet()) {
        if (!held.contains(e.getKey()) && goneSeen.add(e.getKey())) {
          e.setValue(now);
          sequence.put(e.getKey(), published);
        }
      }
      for (long b : held) {
        first.putIfAbsent(b, now);
        last.put(b, now);
        if (goneSeen.remove(b)) {
          sequence.remove(b);
        }
      }
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
        int mayHold = mayHoldDepth(keys, lastHeld.get(pod), truthAt - graceNanos, unseenMayHold);
        int mustHold = mustHoldDepth(keys, firstHeld.get(pod), truthAt - graceNanos);
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
   * Whether the index had not yet applied what the engine had published when the block was first
   * seen gone, or for a block never seen held, by the first snapshot (so its removal is still on
   * its way: ingest lag, not a wrong index). Reads the stream's watermark, at most once per false
   * positive.
   */
  private boolean ingestBehind(String pod, long block) {
    Long publishedBefore = goneBefore.get(pod).get(block);
    if (publishedBefore == null) {
      publishedBefore = publishedBeforeFirst.get(pod);
    }
    if (publishedBefore == null) {
      return false;
    }
    try {
      long watermark = index.watermark(new StreamId(Workloads.MODEL, pod, 0)).orElse(-1);
      // The batch published next may carry the removal (an engine publishes its events after the
      // step that changed its cache), so the index is behind until it has applied that one too.
      return watermark < publishedBefore;
    } catch (RuntimeException e) {
      return false;
    }
  }

  /**
   * How many of the prompt's leading blocks the pod may have held at or after {@code since}: each
   * last seen held (or first seen gone) then or later, or never seen when {@code unseenMayHold}.
   */
  static int mayHoldDepth(
      long[] keys, Map<Long, Long> lastSeen, long since, boolean unseenMayHold) {
    int d = 0;
    while (d < keys.length) {
      Long at = lastSeen.get(keys[d]);
      if (at == null ? !unseenMayHold : at < since) {
        break;
      }
      d++;
    }
    return d;
  }

  /**
   * How many of the prompt's leading blocks the pod must hold: each held continuously since at or
   * before {@code since}.
   */
  static int mustHoldDepth(long[] keys, Map<Long, Long> firstSeen, long since) {
    int d = 0;
    while (d < keys.length) {
      Long at = firstSeen.get(keys[d]);
      if (at == null || at > since) {
        break;
      }
      d++;
    }
    return d;
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
