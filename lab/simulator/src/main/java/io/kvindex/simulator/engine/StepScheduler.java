package io.kvindex.simulator.engine;

import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.TimedCompletion;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.DoubleConsumer;

/**
 * vLLM's scheduling loop for one engine, in simulated time: a waiting queue, at most {@code
 * max_num_seqs} running requests and {@code max_num_batched_tokens} computed per step (chunked
 * prefill), each step's length from {@link EngineTiming}'s cost model. The caller owns the clock:
 * it {@link #add}s requests at their arrival times and calls {@link #finishStep} when {@link
 * #stepEnd} comes. Not thread-safe: one driver runs it (the engine's own lock still guards the
 * cache, so instant requests and ground-truth reads may come from other threads).
 *
 * <p>Each step, as vLLM v1's scheduler: running requests first, in order, each taking {@code
 * min(tokens it still needs, budget left)}; when one needs blocks the pool cannot give, the last
 * running request is preempted (its blocks freed, its progress lost; it goes back to the head of
 * the waiting queue and starts again from its prefix hits, usually its own blocks) until it fits.
 * Then, if nothing was preempted, waiting requests are admitted in order while a sequence slot,
 * budget and blocks remain; admission finds the prefix-cache hits, which cost nothing. The step's
 * KV events go out as one batch when it is scheduled, as vLLM publishes them; a request whose
 * prefill completes yields its first token at the step's end; finished requests free their blocks
 * at the step's end. A restart of the engine aborts every request in flight (their blocks are
 * gone): they complete with no first token ({@code NaN}).
 */
public final class StepScheduler {
  private final Engine engine;
  private final String pod;
  private final EngineTiming timing;
  private final Deque<Entry> waiting = new ArrayDeque<>();
  private final List<Entry> running = new ArrayList<>();
  private final List<Entry> scheduled = new ArrayList<>();
  private Consumer<Step> stepListener = s -> {};
  private double stepEnd = Double.NaN;
  private long generation;
  private long steps;
  private long preemptions;
  private double busySeconds;

  /**
   * One scheduler step, for tests and traces.
   *
   * @param start when it was scheduled
   * @param seconds how long the cost model says it takes
   * @param prefillTokens prompt (or recomputed) tokens it computes
   * @param decodingSequences sequences it generates one token for
   * @param running requests running after scheduling
   * @param waiting requests left waiting
   * @param preempted requests preempted while scheduling it
   */
  public record Step(
      double start,
      double seconds,
      int prefillTokens,
      int decodingSequences,
      int running,
      int waiting,
      int preempted) {}

  private static final class Entry {
    final Sequence seq;
    final double arrival;
    final Consumer<TimedCompletion> done;
    final DoubleConsumer first;
    double firstToken = Double.NaN;
    int preemptions;
    boolean decoding;

    Entry(Sequence seq, double arrival, DoubleConsumer first, Consumer<TimedCompletion> done) {
      this.seq = seq;
      this.arrival = arrival;
      this.first = first;
      this.done = done;
    }
  }

  public StepScheduler(Engine engine, String pod, EngineTiming timing) {
    this.engine = engine;
    this.pod = pod;
    this.timing = timing;
    this.generation = engine.generation();
  }

  /** Sees every step as it is scheduled. */
  public StepScheduler onStep(Consumer<Step> listener) {
    this.stepListener = listener;
    return this;
  }

  /**
   * Queues a request that arrives at {@code now}; if the engine is idle its step starts at once.
   * {@code done} hears of it when its last token is out (or it is aborted).
   *
   * @throws io.kvindex.simulator.RequestTooLargeException if it can never fit the engine's cache
   * @throws io.kvindex.simulator.PodUnavailableException if the engine is asleep
   */
  public void add(InferenceRequest request, double now, Consumer<TimedCompletion> done) {
    add(request, now, at -> {}, done);
  }

  /**
   * As {@link #add(InferenceRequest, double, Consumer)}; {@code first} hears when the request's
   * first token is out (what a gateway streaming the answer sees).
   */
  public void add(
      InferenceRequest request, double now, DoubleConsumer first, Consumer<TimedCompletion> done) {
    if (engine.generation() != generation) {
      abortAll(now);
    }
    waiting.addLast(new Entry(engine.sequence(request), now, first, done));
    if (Double.isNaN(stepEnd)) {
      startStep(now);
    }
  }

  /** When the step in progress ends, or {@code NaN} when the engine is idle. */
  public double stepEnd() {
    return stepEnd;
  }

  /** Requests on the engine: waiting plus running. */
  public int queued() {
    return waiting.size() + running.size();
  }

  /**
   * Prompt tokens still to compute for the requests the engine holds: the running ones' rest, the
   * waiting ones' whole prompts (their prefix hits are found only when they are admitted).
   */
  public long pendingPrefillTokens() {
    long tokens = 0;
    for (Entry e : running) {
      tokens += Math.max(0, e.seq.request().promptLength() - e.seq.kvTokens());
    }
    for (Entry e : waiting) {
      tokens += e.seq.request().promptLength();
    }
    return tokens;
  }

  public long preemptions() {
    return preemptions;
  }

  /** Simulated seconds the engine spent in steps. */
  public double busySeconds() {
    return busySeconds;
  }

  /** Schedules the next step at {@code now}, if there is work; returns whether one started. */
  private boolean startStep(double now) {
    stepEnd = Double.NaN;
    if (engine.generation() != generation) {
      abortAll(now);
    }
    scheduled.clear();
    int budget = timing.maxNumBatchedTokens();
    int prefill = 0;
    int decoding = 0;
    int preempted = 0;
    for (int i = 0; i < running.size() && budget > 0; i++) {
      Entry e = running.get(i);
      int chunk = engine.chunk(e.seq, Math.min(e.seq.target() - e.seq.kvTokens(), budget));
      boolean fits = engine.extend(e.seq, chunk);
      while (!fits) {
        Entry victim = running.remove(running.size() - 1);
        engine.release(victim.seq);
        victim.preemptions++;
        preemptions++;
        preempted++;
        waiting.addFirst(victim);
        if (victim == e) {
          break;
        }
        fits = engine.extend(e.seq, chunk);
      }
      if (!fits) {
        break;
      }
      budget -= chunk;
      e.decoding = e.seq.generated() > 0 && chunk == 1 && e.seq.target() - e.seq.kvTokens() == 1;
      if (e.decoding) {
        decoding++;
      } else {
        prefill += chunk;
      }
      scheduled.add(e);
    }
    while (preempted == 0
        && budget > 0
        && running.size() < timing.maxNumSeqs()
        && !waiting.isEmpty()) {
      Entry e = waiting.peekFirst();
      int chunk = engine.admit(e.seq, budget);
      if (chunk < 0) {
        break;
      }
      waiting.removeFirst();
      running.add(e);
      budget -= chunk;
      e.decoding = false;
      prefill += chunk;
      scheduled.add(e);
    }
    if (scheduled.isEmpty()) {
      engine.publishStep();
      return false;
    }
    engine.publishStep();
    double seconds = timing.stepSeconds(prefill, decoding);
    steps++;
    busySeconds += seconds;
    stepEnd = now + seconds;
    stepListener.accept(
        new Step(now, seconds, prefill, decoding, running.size(), waiting.size(), preempted));
    return true;
  }

  /**
   * Ends the step in progress at {@link #stepEnd}: its tokens are computed, first tokens come out,
   * finished requests free their blocks and complete; then the next step starts, if there is work.
   *
   * @throws IllegalStateException if no step is in progress
   */
  public void finishStep() {
    if (Double.isNaN(stepEnd)) {
      throw new IllegalStateException("no step in progress on " + pod);
    }
    double now = stepEnd;
    if (engine.generation() == generation) {
      for (Entry e : scheduled) {
        if (e.seq.advance() && Double.isNaN(e.firstToken)) {
          e.firstToken = now;
          e.first.accept(now);
        }
        if (e.seq.finished()) {
          engine.release(e.seq);
          running.remove(e);
          e.done.accept(completion(e, now));
        }
      }
    }
    scheduled.clear();
    startStep(now);
  }

  private void abortAll(double now) {
    generation = engine.generation();
    List<Entry> lost = new ArrayList<>(running);
    lost.addAll(waiting);
    running.clear();
    waiting.clear();
    scheduled.clear();
    stepEnd = Double.NaN;
    for (Entry e : lost) {
      e.done.accept(completion(e, now));
    }
  }

  private TimedCompletion completion(Entry e, double now) {
    return new TimedCompletion(
        pod,
        engine.rank(),
        e.seq.request().promptLength(),
        Math.max(0, e.seq.hitTokens()),
        e.seq.generated(),
        e.arrival,
        e.seq.finished() ? e.firstToken : Double.NaN,
        now,
        e.preemptions);
  }
}
