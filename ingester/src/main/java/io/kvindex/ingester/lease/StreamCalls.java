package io.kvindex.ingester.lease;

import io.kvindex.common.Threads;
import io.kvindex.ingester.IngesterMetrics.Operation;
import io.kvindex.ingester.Shared;
import io.kvindex.ingester.stream.StreamStatus;
import io.kvindex.ingester.stream.StreamWorker;
import io.kvindex.redis.RedisUnavailableException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.function.Function;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Redis calls a coordination round makes for the held streams: lease renewals and resync reads,
 * in parallel on a bounded pool (past its queue the round's thread makes them itself), and the
 * liveness heartbeats of idle pods. The decisions on renewals are the coordinator's. Thread-safe.
 */
final class StreamCalls {
  private static final Logger log = LoggerFactory.getLogger(StreamCalls.class);

  private static final int THREADS = 4;

  /**
   * The least time between two resyncs of one stream, whatever routers ask: a resync that cannot
   * infer purges and replays the stream, which no router may repeat at will.
   */
  static final Duration RESYNC_SPACING = Duration.ofSeconds(30);

  private final Shared shared;
  private final ThreadPoolExecutor pool;

  StreamCalls(Shared shared) {
    this.shared = shared;
    this.pool =
        Threads.bounded(
            "kvindex-ingester-lease", THREADS, 4096, new ThreadPoolExecutor.CallerRunsPolicy());
  }

  /**
   * Renews the lease of each of {@code held}; returns, in the same order, whether each renewal
   * succeeded (a renewal that failed with an error is counted, logged and not renewed).
   */
  List<Boolean> renew(List<StreamWorker> held, Duration ttl) throws InterruptedException {
    List<Future<Boolean>> results =
        submit(held, w -> () -> shared.index().renewLease(w.id(), w.lease(), ttl));
    List<Boolean> renewed = new ArrayList<>(held.size());
    for (int i = 0; i < held.size(); i++) {
      StreamWorker w = held.get(i);
      try {
        renewed.add(results.get(i).get());
      } catch (ExecutionException e) {
        shared.metrics().realError(Operation.LEASE);
        log.error("pod={} stream={}: lease renewal failed", w.id().pod(), w.id(), e.getCause());
        renewed.add(false);
      }
    }
    return renewed;
  }

  /**
   * Hands each of {@code held} the drift resync a router asked for its pod, if one stands that this
   * stream has not taken yet (one read per stream).
   */
  void takeResyncs(List<StreamWorker> held) throws InterruptedException {
    List<Future<Optional<String>>> asked =
        submit(held, w -> () -> shared.index().takeResync(w.id(), RESYNC_SPACING));
    for (int i = 0; i < held.size(); i++) {
      StreamWorker w = held.get(i);
      try {
        asked.get(i).get().ifPresent(note -> w.status().requestResync(note));
      } catch (ExecutionException e) {
        if (e.getCause() instanceof RedisUnavailableException) {
          shared.metrics().swallowed(Operation.RESYNC);
        } else {
          shared.metrics().realError(Operation.RESYNC);
          log.error(
              "pod={} stream={}: reading its resync request failed",
              w.id().pod(),
              w.id(),
              e.getCause());
        }
      }
    }
  }

  private <T> List<Future<T>> submit(
      List<StreamWorker> held, Function<StreamWorker, Callable<T>> call) {
    List<Future<T>> out = new ArrayList<>(held.size());
    for (StreamWorker w : held) {
      out.add(pool.submit(call.apply(w)));
    }
    return out;
  }

  /**
   * Keeps idle owned pods live while their event channels show that their engines are (a batch, a
   * connected SUB socket answering heartbeats, a replay answer within a third of the liveness TTL),
   * and their {@code /metrics}, if any, answers; a pod whose batches are being applied is refreshed
   * by them. A pod whose channels all went silent is left to expire: lookups stop crediting it one
   * liveness TTL later.
   */
  void keepLive(Collection<StreamWorker> held, Predicate<String> podReachable) {
    Set<List<String>> pods = new HashSet<>();
    long idle = shared.config().podLivenessTtl().toNanos() / 3;
    for (StreamWorker w : held) {
      if (w.status().state() == StreamStatus.State.RUNNING
          && shared.nanos() - w.status().lastAppliedNanos() > idle
          && w.status().silentNanos() < idle
          && podReachable.test(w.id().pod())) {
        pods.add(List.of(w.id().model(), w.id().pod()));
      }
    }
    for (List<String> p : pods) {
      if (!shared.index().heartbeat(p.get(0), p.get(1), shared.config().podLivenessTtl())) {
        shared.metrics().swallowed(Operation.HEARTBEAT);
      }
    }
  }

  /** Stops the pool; calls under way are interrupted. */
  void shutdownNow() {
    pool.shutdownNow();
  }
}
