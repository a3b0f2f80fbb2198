package io.kvindex.chaos;

import io.kvindex.demo.Workloads;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.SimulatedPod;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.slf4j.LoggerFactory;

/**
 * Fills simulated pods' replay rings with long-prompt batches: each pod serves prompts of its own
 * (random tokens, so that every block is new and each request publishes one batch storing all of
 * them, with their token ids) until it has published a ring's worth. Thread-safe (stateless).
 */
final class RingFill {
  private RingFill() {}

  /**
   * Serves prompts of {@code promptBlocks} full blocks on every pod, in parallel, until each has
   * published {@code batches} batches; returns the last {@code keep} prompts of each pod.
   */
  static List<InferenceRequest> fill(
      List<SimulatedPod> pods, int batches, int promptBlocks, long seed, int keep)
      throws InterruptedException {
    ExecutorService threads = Executors.newFixedThreadPool(pods.size());
    try {
      List<Future<Deque<InferenceRequest>>> filled = new ArrayList<>();
      for (int i = 0; i < pods.size(); i++) {
        SimulatedPod pod = pods.get(i);
        Random random = new Random(seed * 31 + i);
        filled.add(threads.submit(() -> fill(pod, batches, promptBlocks, random, keep)));
      }
      List<InferenceRequest> kept = new ArrayList<>();
      for (Future<Deque<InferenceRequest>> f : filled) {
        kept.addAll(f.get());
      }
      return kept;
    } catch (ExecutionException e) {
      throw new IllegalStateException("filling the pods' rings failed", e.getCause());
    } finally {
      threads.shutdownNow();
    }
  }

  private static Deque<InferenceRequest> fill(
      SimulatedPod pod, int batches, int promptBlocks, Random random, int keep) {
    Deque<InferenceRequest> last = new ArrayDeque<>();
    long logged = 0;
    while (pod.nextSequence(0) < batches) {
      InferenceRequest r = prompt(random, promptBlocks);
      pod.submit(r);
      last.addLast(r);
      if (last.size() > keep) {
        last.removeFirst();
      }
      long published = pod.nextSequence(0);
      if (published - logged >= batches / 4) {
        logged = published;
        LoggerFactory.getLogger(RingFill.class)
            .info("{}: {} of {} batches in its ring", pod.name(), published, batches);
      }
    }
    return last;
  }

  /** A prompt of {@code blocks} full blocks and one token more, with a one-token answer. */
  static InferenceRequest prompt(Random random, int blocks) {
    int[] tokens = new int[blocks * Workloads.BLOCK_SIZE + 1];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = random.nextInt(32_000);
    }
    return InferenceRequest.of(tokens, new int[] {random.nextInt(32_000)});
  }
}
