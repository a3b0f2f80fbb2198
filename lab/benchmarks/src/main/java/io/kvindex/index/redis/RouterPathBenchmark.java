package io.kvindex.index.redis;

import io.kvindex.hash.BlockHasher;
import io.kvindex.hash.HashAlgorithm;
import io.kvindex.index.CacheLayout;
import io.kvindex.index.HybridHit;
import io.kvindex.index.IndexConfig;
import io.kvindex.index.PodMatch;
import io.kvindex.index.Tier;
import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * JMH: the router's in-process work per score, without Redis: hash a 4 096-token prompt
 * (sha256_cbor, block size 16), decode a segment read's reply (the 16 segment values of 256 blocks
 * for 64 candidates: 8 hold every block, 24 a random prefix, 32 none, as {@code bench router}
 * stores them) into per-pod matches, and rank the candidates by score as the router does. In this
 * package because the decoder is the index's own, package-private code. Not thread-safe (JMH runs
 * it one state per thread).
 *
 * <p>Run, after {@code mvn -B install -DskipTests} (the build runs JMH's annotation processor; the
 * test suite never runs this): {@code java -cp
 * "lab/launcher/target/kvindex-lab.jar:lab/launcher/target/lib/*" org.openjdk.jmh.Main
 * RouterPathBenchmark}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class RouterPathBenchmark {
  private static final int BLOCKS = 256;
  private static final int BLOCK_SIZE = 16;
  private static final int PODS = 64;
  private static final int FULL = 8;
  private static final int PARTIAL = 24;
  private static final int WINDOW = 128;
  private static final int WINDOW_BLOCKS = (WINDOW - 1 + BLOCK_SIZE - 1) / BLOCK_SIZE;
  private static final boolean[] NONE_BY_BLOCKS = new boolean[BLOCKS / KeySchema.SEGMENT_BLOCKS];

  private BlockHasher hasher;
  private int[] tokens;
  private long[] keys;
  private List<String> pods;
  private StreamLayout layout;
  private PodMatch[] none;
  private byte[][] segments;
  private double[] weights;
  private HybridHit rule;
  private byte[][] windowSegments;
  private byte[][] windowPrefixSegments;
  private PodMatch[] hybridFull;
  private Prompt prompt;

  /** Builds the prompt, the candidates' records and the segment values a head read returns. */
  @Setup
  public void setUp() {
    Random random = new Random(7);
    hasher = BlockHasher.create(HashAlgorithm.SHA256_CBOR, "0", BLOCK_SIZE);
    tokens = new int[BLOCKS * BLOCK_SIZE];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = random.nextInt(150_000);
    }
    keys = hasher.blockHashes(tokens);
    pods = new ArrayList<>();
    List<byte[]> records = new ArrayList<>();
    int[] depth = new int[PODS];
    for (int p = 0; p < PODS; p++) {
      pods.add("pod-" + p);
      records.add(record(p + 1));
      depth[p] = p < FULL ? BLOCKS : p < FULL + PARTIAL ? 1 + random.nextInt(BLOCKS) : 0;
    }
    layout = StreamLayout.of(records, false); // a router keeps these across lookups
    none = pods.stream().map(PodMatch::none).toArray(PodMatch[]::new);
    segments = new byte[BLOCKS / KeySchema.SEGMENT_BLOCKS][];
    for (int k = 0; k < segments.length; k++) {
      segments[k] = segment(k, depth, 0);
    }
    rule =
        new HybridHit(
            new CacheLayout(
                List.of(
                    new CacheLayout.Group(0, "full_attention", BLOCK_SIZE, 0),
                    new CacheLayout.Group(1, "sliding_window", BLOCK_SIZE, WINDOW))),
            BLOCK_SIZE);
    prompt = new Prompt(new byte[10], keys);
    // The hybrid model's pods as bench index stores them: each a random prefix, and the window
    // ending there.
    int[] hybridDepth = new int[PODS];
    for (int p = 0; p < PODS; p++) {
      hybridDepth[p] = random.nextInt(BLOCKS + 1);
    }
    // Each segment value holds the full-attention group's slots, then the window group's (group 1:
    // offsets from 32), as apply.lua keeps them.
    int windowBase = HybridPlan.slotBase(rule.specGroups().get(1), true);
    BlockValues full = new BlockValues(BLOCKS);
    windowSegments = new byte[BLOCKS / KeySchema.SEGMENT_BLOCKS][];
    windowPrefixSegments = new byte[BLOCKS / KeySchema.SEGMENT_BLOCKS][];
    for (int k = 0; k < BLOCKS / KeySchema.SEGMENT_BLOCKS; k++) {
      int start = k * KeySchema.SEGMENT_BLOCKS;
      int end = start + KeySchema.SEGMENT_BLOCKS;
      byte[] fullSlots = segment(k, hybridDepth, 0);
      byte[] windowed = concat(fullSlots, segment(k, hybridDepth, WINDOW_BLOCKS, windowBase));
      SegmentCodec.read(full, full.extend(end - start), windowed, keys, start, end);
      windowSegments[k] = windowed;
      windowPrefixSegments[k] = concat(fullSlots, segment(k, hybridDepth, 0, windowBase));
    }
    Map<Tier, Double> tierWeights = new EnumMap<>(Tier.class);
    tierWeights.put(Tier.GPU, 1.0);
    tierWeights.put(Tier.CPU, 0.8);
    tierWeights.put(Tier.STORAGE, 0.5);
    tierWeights.put(Tier.OTHER, 0.5);
    weights =
        LookupDecoder.weights(
            new IndexConfig(
                "bench",
                1,
                tierWeights,
                Duration.ofSeconds(30),
                32,
                256,
                Duration.ofHours(1),
                4096));
    LookupDecoder fullDecoder = new LookupDecoder(none, layout, weights);
    fullDecoder.addValues(full);
    hybridFull = fullDecoder.matches();
  }

  /** Block hashing of the prompt. */
  @Benchmark
  public long[] hash() {
    return hasher.blockHashes(tokens);
  }

  /** The segment values into block values, then into per-pod matches. */
  @Benchmark
  public PodMatch[] decode() {
    BlockValues values = new BlockValues(BLOCKS);
    for (int k = 0; k < segments.length; k++) {
      int start = k * KeySchema.SEGMENT_BLOCKS;
      int end = start + KeySchema.SEGMENT_BLOCKS;
      SegmentCodec.read(values, values.extend(end - start), segments[k], keys, start, end);
    }
    LookupDecoder decoder = new LookupDecoder(none, layout, weights);
    decoder.addValues(values);
    return decoder.matches();
  }

  /**
   * What a hybrid lookup adds to the single-group one, in process: a gpt-oss-like model (full
   * attention beside a sliding window of 128 tokens, blocks of 16) whose 64 pods each hold a random
   * prefix and the window ending there, as {@code bench index}'s hybrid lookup stores them; the
   * window group's slots in the 16 segment values (beside the full-attention group's) decoded and
   * combined with the full-attention matches (decoded in setup, as the single-group lookup decodes
   * them) by vLLM's hit rule.
   */
  @Benchmark
  public PodMatch[] hybridCombine() {
    return combine(windowSegments);
  }

  /**
   * As {@link #hybridCombine}, with the window group listing every block of each pod's prefix, as
   * vLLM's events leave it while no out-of-window block has been evicted yet (it frees them without
   * a BlockRemoved): the most the window group's segments hold.
   */
  @Benchmark
  public PodMatch[] hybridCombineWindowHoldsPrefix() {
    return combine(windowPrefixSegments);
  }

  /** The hybrid lookup's plan and combine over segment values holding both groups' slots. */
  private PodMatch[] combine(byte[][] segmentValues) {
    HybridPlan plan =
        new HybridPlan(rule, BLOCK_SIZE, BLOCKS * BLOCK_SIZE + 1, keys, g -> new byte[10], true);
    return plan.combine(hybridFull, layout, List.of(), segmentValues, NONE_BY_BLOCKS, true, prompt);
  }

  /** Decode, then the candidates ranked by score. */
  @Benchmark
  public List<PodMatch> decodeAndScore() {
    return rank(decode());
  }

  /** Hash, decode and score: everything a score costs the router besides Redis and lettuce. */
  @Benchmark
  public List<PodMatch> path() {
    long[] hashed = hasher.blockHashes(tokens);
    if (hashed.length != keys.length) {
      throw new IllegalStateException("the prompt hashed to another length");
    }
    return rank(decode());
  }

  private static List<PodMatch> rank(PodMatch[] matches) {
    List<PodMatch> ranked = new ArrayList<>(List.of(matches));
    ranked.sort(Comparator.comparingDouble(PodMatch::score).reversed());
    return ranked;
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  /** A pod record: a deadline far ahead, then one (slot, rank 0) pair. */
  private static byte[] record(int slot) {
    byte[] rec = new byte[12];
    for (int b = 0; b < 8; b++) {
      rec[b] = (byte) (Long.MAX_VALUE >>> (56 - 8 * b));
    }
    rec[8] = (byte) (slot >>> 8);
    rec[9] = (byte) slot;
    return rec;
  }

  /**
   * Segment {@code k}'s value: for each of its blocks, the GPU entries of the pods that hold it.
   */
  private byte[] segment(int k, int[] depth, int window) {
    return segment(k, depth, window, 0);
  }

  /**
   * As {@link #segment(int, int[], int)}, the slots' offsets from {@code base} (a sparse group's
   * slots in the full-attention group's segments).
   */
  private byte[] segment(int k, int[] depth, int window, int base) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (int o = 0; o < KeySchema.SEGMENT_BLOCKS; o++) {
      int block = k * KeySchema.SEGMENT_BLOCKS + o;
      ByteArrayOutputStream value = new ByteArrayOutputStream();
      for (int p = 0; p < PODS; p++) {
        if (depth[p] > block && (window == 0 || depth[p] - window <= block)) {
          int slot = p + 1;
          value.write(slot >>> 4);
          value.write(((slot & 0xf) << 4) | Tier.GPU.bit());
        }
      }
      if (value.size() == 0) {
        continue;
      }
      out.write(base + o);
      for (int b = 0; b < 8; b++) {
        out.write((int) (keys[block] >>> (56 - 8 * b)));
      }
      out.write(value.size() >>> 8);
      out.write(value.size());
      out.writeBytes(value.toByteArray());
    }
    return out.toByteArray();
  }
}
