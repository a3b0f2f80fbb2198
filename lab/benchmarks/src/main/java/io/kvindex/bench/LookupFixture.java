package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.index.StreamId;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.function.Function;

/**
 * The index the lookup benchmark reads: prompts of {@code promptBlocks} random block hashes, each
 * cached fully on {@link #FULL_PODS} random pods, to a uniformly random depth in [1, blocks - 1] on
 * {@link #PARTIAL_PODS} others and not at all on the rest. Every lookup asks about one of these
 * prompts with all pods as candidates, so it walks all the prompt's blocks (some pod holds each)
 * and gets a mix of full, partial and zero depths. Prompts are added until the index holds at least
 * the wanted number of (block, pod) entries. Immutable after {@link #generate}.
 */
final class LookupFixture {
  static final int FULL_PODS = 8;
  static final int PARTIAL_PODS = 24;

  final List<String> pods;
  final List<long[]> prompts = new ArrayList<>();

  /** depths.get(prompt)[pod]: the blocks of the prompt the pod holds. */
  final List<int[]> depths = new ArrayList<>();

  long entries;

  private LookupFixture(List<String> pods) {
    this.pods = pods;
  }

  static LookupFixture generate(long seed, int podCount, int promptBlocks, long minEntries) {
    return generate(seed, podCount, minEntries, random -> randomChain(random, promptBlocks));
  }

  /** As above, each prompt's block chain made by {@code newChain} (all of one length). */
  static LookupFixture generate(
      long seed, int podCount, long minEntries, Function<Random, long[]> newChain) {
    if (podCount < FULL_PODS + PARTIAL_PODS) {
      throw new IllegalArgumentException("need at least " + (FULL_PODS + PARTIAL_PODS) + " pods");
    }
    Random random = new Random(seed);
    LookupFixture fixture = new LookupFixture(podNames("pod-", podCount));
    List<Integer> order = new ArrayList<>();
    for (int p = 0; p < podCount; p++) {
      order.add(p);
    }
    while (fixture.entries < minEntries) {
      long[] prompt = newChain.apply(random);
      int promptBlocks = prompt.length;
      int[] depth = new int[podCount];
      Collections.shuffle(order, random);
      for (int i = 0; i < FULL_PODS + PARTIAL_PODS; i++) {
        depth[order.get(i)] = i < FULL_PODS ? promptBlocks : 1 + random.nextInt(promptBlocks - 1);
        fixture.entries += depth[order.get(i)];
      }
      fixture.prompts.add(prompt);
      fixture.depths.add(depth);
    }
    return fixture;
  }

  /** Each pod's stream and the batches that store what it holds. */
  List<ApplyPump.Feed> feeds(String model, int batchBlocks) {
    return feeds(model, batchBlocks, 0, prompts.size());
  }

  /** As {@link #feeds(String, int)}, for prompts {@code from} (inclusive) to {@code to}. */
  List<ApplyPump.Feed> feeds(String model, int batchBlocks, int from, int to) {
    List<ApplyPump.Feed> feeds = new ArrayList<>();
    for (int p = 0; p < pods.size(); p++) {
      List<ChainFeed.Span> spans = new ArrayList<>();
      for (int i = from; i < to; i++) {
        if (depths.get(i)[p] > 0) {
          spans.add(ChainFeed.Span.prefix(prompts.get(i), depths.get(i)[p]));
        }
      }
      feeds.add(
          new ApplyPump.Feed(StreamId.of(model, pods.get(p)), new ChainFeed(spans, batchBlocks)));
    }
    return feeds;
  }

  void describe(ObjectNode json) {
    json.put("entries", entries);
    json.put("pods", pods.size());
    json.put("prompts", prompts.size());
    json.put(
        "depth_distribution",
        "per prompt: "
            + FULL_PODS
            + " random pods hold all its blocks, "
            + PARTIAL_PODS
            + " hold a prefix of uniformly random length in [1, blocks-1], the other "
            + (pods.size() - FULL_PODS - PARTIAL_PODS)
            + " hold none; every lookup walks all blocks (no early exit)");
  }

  /** The entries prompts {@code from} (inclusive) to {@code to} hold. */
  long entries(int from, int to) {
    long total = 0;
    for (int i = from; i < to; i++) {
      for (int depth : depths.get(i)) {
        total += depth;
      }
    }
    return total;
  }

  /**
   * Prompt {@code prompt}'s pods, those holding the most of it first (ties in pod order), then the
   * rest: a lookup naming the first N walks as far into the prompt as any N candidates can.
   */
  List<String> holdersFirst(int prompt) {
    int[] depth = depths.get(prompt);
    List<Integer> order = new ArrayList<>();
    for (int p = 0; p < pods.size(); p++) {
      order.add(p);
    }
    order.sort((a, b) -> Integer.compare(depth[b], depth[a]));
    List<String> names = new ArrayList<>(order.size());
    order.forEach(p -> names.add(pods.get(p)));
    return names;
  }

  static List<String> podNames(String prefix, int count) {
    List<String> names = new ArrayList<>(count);
    for (int p = 0; p < count; p++) {
      names.add(String.format("%s%03d", prefix, p));
    }
    return names;
  }

  static long[] randomChain(Random random, int blocks) {
    long[] chain = new long[blocks];
    for (int i = 0; i < blocks; i++) {
      chain[i] = random.nextLong();
    }
    return chain;
  }
}
