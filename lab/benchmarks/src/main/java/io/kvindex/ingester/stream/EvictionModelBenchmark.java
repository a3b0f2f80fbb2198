package io.kvindex.ingester.stream;

import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.Touch;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * JMH: what inferring a long-prompt engine's evictions costs a stream's worker, without Redis. An
 * engine of {@code capacity} GPU blocks (32 768, and 4 096 to compare) that evicts without
 * publishing serves conversations of about 750 blocks a prompt (12 000 tokens at 16 a block): 400
 * conversations, each turn its history and 48 new blocks, so that most blocks are evicted before
 * they are used again. Each request publishes its computed blocks in batches of 128 (chunked
 * prefill), and a router's touch records what the engine reported; the model takes the touches in
 * and then builds and settles one call per batch, as the worker does. {@code keepingUp}: each
 * request's touch, then its batches. {@code behind}: a stream 64 requests behind its engine, which
 * reads the touches of 64 requests at once (they come from routers, which are not behind) before it
 * applies the batches of the 64 requests before them. One operation is one request, the simulated
 * engine's own work included: divide by the batches a request published (about 6 to 7 here: most
 * prompts miss; the run prints it) for the cost per batch, and compare the two capacities for what
 * the engine's size adds to it (nothing, when the model's work is linear in what it takes in). In
 * this package because the model is the ingester's own, package-private code. Not thread-safe (JMH
 * runs it one state per thread).
 *
 * <p>Run, after the CLI is built ({@code scripts/kvindex --help} builds it): {@code java -cp
 * "lab/launcher/target/kvindex-lab.jar:lab/launcher/target/lib/*" org.openjdk.jmh.Main
 * EvictionModelBenchmark}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class EvictionModelBenchmark {
  static final int FIRST_TURN_BLOCKS = 700;
  static final int TURN_BLOCKS = 48;
  static final int LONGEST_HISTORY = 1_000;
  static final int CONVERSATIONS = 400;
  static final int BATCH_BLOCKS = 128;

  /** When touches are recorded: after the batches, whose time is 1 s (no removal is published). */
  static final long TOUCHED_AT = 2_000;

  /**
   * How far behind its engine the stream is, in requests: its touches are read this many at once.
   */
  static final int BEHIND = 64;

  @Param({"keepingUp", "behind"})
  public String stream;

  /** The engine's GPU blocks, which the model is sized to. */
  @Param({"4096", "32768"})
  public int capacity;

  private LongPrompts load;

  @Setup
  public void setUp() {
    load = new LongPrompts(new Random(29), capacity, stream.equals("behind") ? BEHIND : 0);
    for (int i = 0; i < Math.max(4 * capacity / FIRST_TURN_BLOCKS, 2 * BEHIND); i++) {
      load.request(); // the engine and the model full
    }
  }

  @TearDown
  public void report() {
    System.out.printf(
        "%n%s, %d blocks: %.2f batches a request, %d blocks held%n",
        stream, capacity, (double) load.batches / load.requests, load.model.held());
  }

  @Benchmark
  public int request() {
    return load.request();
  }

  /**
   * The workload: an engine's LRU cache that evicts without publishing, conversations on it, and a
   * model fed what a stream's worker would feed it.
   */
  static final class LongPrompts {
    private final Random random;
    private final LinkedHashMap<Long, Boolean> engine;
    private final int capacity;
    private final List<List<Long>> histories = new ArrayList<>();
    private final List<Touch> unread = new ArrayList<>();
    private final ArrayDeque<List<Batch>> backlog = new ArrayDeque<>();
    private final int behind;
    final EvictionModel model;
    private long seq;
    long batches;
    long requests;

    LongPrompts(Random random, int capacity, int behind) {
      this.random = random;
      this.behind = behind;
      this.capacity = capacity;
      this.engine = new LinkedHashMap<>(2 * capacity, 0.75f, true);
      this.model = new EvictionModel(capacity);
      for (int c = 0; c < CONVERSATIONS; c++) {
        histories.add(fresh(FIRST_TURN_BLOCKS));
      }
    }

    private List<Long> fresh(int blocks) {
      List<Long> out = new ArrayList<>(blocks + LONGEST_HISTORY);
      for (int i = 0; i < blocks; i++) {
        out.add(random.nextLong());
      }
      return out;
    }

    /** Serves one request and feeds the model; returns the batches it published. */
    int request() {
      int c = random.nextInt(CONVERSATIONS);
      List<Long> prompt = histories.get(c);
      for (int i = 0; i < TURN_BLOCKS; i++) {
        prompt.add(random.nextLong());
      }
      int predicted = listedPrefix(prompt);
      List<Batch> published = serve(prompt);
      int hit = prompt.size() - computed;
      long[] keys = prompt.stream().mapToLong(Long::longValue).toArray();
      int reportable = prompt.size() - 1;
      int error = Math.min(predicted, reportable) - Math.min(hit, reportable);
      unread.add(new Touch(0, keys, error, Math.min(hit, reportable), TOUCHED_AT));
      backlog.add(published);
      if (unread.size() > behind) {
        model.touched(List.copyOf(unread), 0, true);
        unread.clear();
      }
      while (backlog.size() > behind) {
        for (Batch b : backlog.poll()) {
          model.eventsToApply(List.of(b), Long.MAX_VALUE);
          model.applied(b.seq());
        }
      }
      if (prompt.size() > LONGEST_HISTORY) {
        histories.set(c, fresh(FIRST_TURN_BLOCKS));
      }
      requests++;
      batches += published.size();
      return published.size();
    }

    private int computed;

    /** The engine serves the prompt: hits from block 0, the rest stored in batches. */
    private List<Batch> serve(List<Long> prompt) {
      int hit = 0;
      while (hit < prompt.size() - 1 && engine.containsKey(prompt.get(hit))) {
        hit++;
      }
      List<Batch> out = new ArrayList<>();
      for (int from = hit; from < prompt.size(); from += BATCH_BLOCKS) {
        List<Long> run =
            new ArrayList<>(prompt.subList(from, Math.min(prompt.size(), from + BATCH_BLOCKS)));
        Long parent = from == 0 ? null : prompt.get(from - 1);
        List<KvEvent> events = List.of(BlockStored.of(run, parent, List.of(), 16));
        KvEventBatch batch = KvEventBatch.of(1.0, events, 0);
        out.add(new Batch(seq++, batch.hashCode(), batch, null, true, HeapBytes.of(batch)));
      }
      for (int i = prompt.size() - 1; i >= 0; i--) {
        engine.put(prompt.get(i), Boolean.TRUE); // freed last block first: the head most recent
      }
      while (engine.size() > capacity) {
        engine.remove(engine.keySet().iterator().next()); // evicted, never published
      }
      computed = prompt.size() - hit;
      return out;
    }

    private int listedPrefix(List<Long> prompt) {
      int n = 0;
      while (n < prompt.size() && model.listed(prompt.get(n))) {
        n++;
      }
      return n;
    }
  }
}
