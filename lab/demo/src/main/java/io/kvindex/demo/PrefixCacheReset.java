package io.kvindex.demo;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvindex.inspect.IndexReport;
import io.kvindex.inspect.RedisInspector;
import io.kvindex.simulator.Completion;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.SimulatedPod;
import java.io.IOException;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The demo's midway prefix-cache reset, and what became of its AllBlocksCleared. Not thread-safe:
 * the demo's thread drives it.
 *
 * <p>vLLM queues the AllBlocksCleared of a reset and publishes it with the engine's next scheduler
 * step, ahead of that step's own events; an engine with no request runs no step (the simulator does
 * the same). So the reset clears the pod holding the most blocks (a pod that holds nothing shows
 * nothing), and the outcome tells the cases apart: the clear went out and purged the pod (handled),
 * went out and no purge was counted (an ingester failure), or never went out because no request
 * reached the engine after the reset. In the last case the index lists what the pod held until the
 * engine's next request, which is how vLLM behaves, not a failure: the demo then sends the engine
 * one request, as the next one the pod would get, and checks that its step purges the pod.
 */
final class PrefixCacheReset {
  private final String pod;
  private final int heldBlocks;
  private final long listedEntries;
  private final long clearBatch;
  private int atRequest = -1;
  private boolean published;
  private int publishedWith = -1;
  private RouterPolicy.Predictions afterReset;
  private Probe probe;

  private PrefixCacheReset(String pod, int heldBlocks, long listedEntries, long clearBatch) {
    this.pod = pod;
    this.heldBlocks = heldBlocks;
    this.listedEntries = listedEntries;
    this.clearBatch = clearBatch;
  }

  /**
   * Resets the prefix cache of the pod holding the most blocks (on a tie the first in fleet order),
   * noting what it held and what the index listed of it just before.
   */
  static PrefixCacheReset fire(Fleet fleet, RedisInspector inspector) {
    String target = null;
    int most = -1;
    for (String name : fleet.names()) {
      int held = fleet.held(name).size();
      if (held > most) {
        target = name;
        most = held;
      }
    }
    SimulatedPod pod = fleet.pod(target);
    PrefixCacheReset reset =
        new PrefixCacheReset(target, most, listed(inspector, target), pod.nextSequence(0));
    pod.resetPrefixCache();
    return reset;
  }

  /** The pod whose prefix cache was reset. */
  String pod() {
    return pod;
  }

  /** The blocks the pod held when it was reset. */
  int heldBlocks() {
    return heldBlocks;
  }

  /** Whether {@link #afterRun} sent the engine a request, and it published the clear. */
  boolean probed() {
    return probe != null && probe.published();
  }

  /** A progress line about the request {@link #afterRun} sent the engine, if it sent one. */
  Optional<String> probe() {
    return Optional.ofNullable(probe)
        .map(
            p ->
                String.format(
                    Locale.ROOT,
                    "no request reached %s after its reset: sent it request %d again, so that its"
                        + " engine publishes the AllBlocksCleared",
                    pod,
                    p.request()));
  }

  /**
   * After the kvindex run: whether the engine published its clear, and what the routers predicted
   * for the pod from the reset on. If the clear is still queued (no request reached the engine),
   * sends the engine one request so that its step publishes it: the last one the pod served before
   * the reset, whose prefix the index still lists.
   *
   * @param atRequest the index of the request the reset came before
   */
  void afterRun(
      int atRequest,
      Fleet fleet,
      Gateway gateway,
      RouterClient routers,
      List<InferenceRequest> requests,
      RedisInspector inspector)
      throws InterruptedException {
    this.atRequest = atRequest;
    SimulatedPod engine = fleet.pod(pod);
    published = engine.nextSequence(0) > clearBatch;
    publishedWith = gateway.firstServedBy(pod, atRequest);
    afterReset = gateway.predictions(pod, atRequest, Integer.MAX_VALUE);
    int last = gateway.lastServedBy(pod, atRequest);
    if (published || heldBlocks == 0 || last < 0) {
      return;
    }
    long listedAtEnd = listed(inspector, pod);
    InferenceRequest request = requests.get(last);
    int predicted = predictedBlocks(routers, request);
    Completion served = engine.submit(request);
    probe =
        new Probe(
            last,
            listedAtEnd,
            predicted,
            served.cachedTokens(),
            engine.nextSequence(0) > clearBatch);
  }

  /** The summary's line: what the reset cleared and how it was handled. */
  String describe(long clearsPurged) {
    return String.format(
        Locale.ROOT,
        "reset %s's prefix cache (before request %d; it held %d blocks, the index listed %d"
            + " entries of it): %s",
        pod,
        atRequest,
        heldBlocks,
        listedEntries,
        outcome(clearsPurged));
  }

  private String outcome(long clearsPurged) {
    if (heldBlocks == 0) {
      return "nothing to purge: no pod held a block";
    }
    if (published) {
      return clearsPurged == 0
          ? String.format(
              Locale.ROOT,
              "NOT handled: its AllBlocksCleared went out in batch %d but no AllBlocksCleared"
                  + " purge was counted",
              clearBatch)
          : String.format(
              Locale.ROOT,
              "handled: its AllBlocksCleared went out with the engine's next step (batch %d,"
                  + " request %d) and purged the pod's entries; over-predicted: %d of the %d"
                  + " requests %s served from the reset on",
              clearBatch,
              publishedWith,
              afterReset.over(),
              afterReset.observed(),
              pod);
    }
    if (probe == null) {
      return "NOT handled: its AllBlocksCleared was never published";
    }
    String queued =
        String.format(
            Locale.ROOT,
            "no request reached %s after the reset, so its AllBlocksCleared stayed queued in the"
                + " engine (vLLM publishes it with the next scheduler step) and the index listed"
                + " %d entries of it to the end of the run; request %d sent to it again after the"
                + " run (the index predicted %d blocks, the engine served %d tokens from cache) ",
            pod,
            probe.listedAtEnd(),
            probe.request(),
            probe.predictedBlocks(),
            probe.cachedTokens());
    if (!probe.published()) {
      return queued + "published nothing: NOT handled";
    }
    return queued
        + (clearsPurged > 0
            ? "published it, and the pod was purged: handled"
            : "published it, but no AllBlocksCleared purge was counted: NOT handled");
  }

  /** What makes the demo fail, if anything. */
  Optional<String> problem(long clearsPurged) {
    if (heldBlocks == 0) {
      return Optional.empty();
    }
    if (published || probe != null && probe.published()) {
      return clearsPurged > 0
          ? Optional.empty()
          : Optional.of(
              "the AllBlocksCleared of "
                  + pod
                  + "'s prefix-cache reset was published but no purge was counted");
    }
    return Optional.of(
        "the AllBlocksCleared of " + pod + "'s prefix-cache reset was never published");
  }

  private int predictedBlocks(RouterClient routers, InferenceRequest request)
      throws InterruptedException {
    try {
      JsonNode answer = routers.score(request.promptTokens(), List.of(pod), null);
      return answer.path("pods").path(pod).path("matched_blocks").asInt(0);
    } catch (IOException e) {
      return -1;
    }
  }

  /** The pod's entries in the index, over its ranks' published slots. */
  private static long listed(RedisInspector inspector, String pod) {
    long n = 0;
    for (IndexReport.Pod p : inspector.read(Workloads.MODEL, pod).pods()) {
      for (IndexReport.Rank rank : p.ranks()) {
        if (!rank.staged()) {
          n += rank.blocks().all();
        }
      }
    }
    return n;
  }

  /**
   * The request sent to an engine whose clear was still queued after the run.
   *
   * @param request its index in the run (sent again)
   * @param listedAtEnd the pod's entries in the index just before
   * @param predictedBlocks the routers' depth for the pod (-1: no answer)
   * @param cachedTokens what the engine served from its cache
   * @param published whether the engine published a batch with it (carrying the clear)
   */
  private record Probe(
      int request, long listedAtEnd, int predictedBlocks, long cachedTokens, boolean published) {}
}
