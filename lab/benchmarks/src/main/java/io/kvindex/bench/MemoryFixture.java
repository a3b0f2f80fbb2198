package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.index.StreamId;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/**
 * The memory benchmark's fleet: {@link #PODS} pods that share prefixes. Every prompt is {@code
 * promptBlocks} long and starts with the same {@link #SYSTEM_BLOCKS}-block system prompt, which
 * every pod stores once; each prompt's own blocks are then stored by a uniformly random number (1
 * to 8) of random pods, parent-linked to the system prompt as vLLM would send them. Prompts are
 * added until the (block, pod) entries reach the wanted number. Immutable after {@link #generate}.
 */
final class MemoryFixture {
  static final int PODS = 8;
  static final int SYSTEM_BLOCKS = 32;

  private final List<String> pods = LookupFixture.podNames("mem-pod-", PODS);
  private final List<List<ChainFeed.Span>> spans = new ArrayList<>();
  long entries;
  long distinctBlocks;
  private int prompts;

  static MemoryFixture generate(long seed, int promptBlocks, long minEntries) {
    Random random = new Random(seed);
    MemoryFixture fixture = new MemoryFixture();
    long[] system = LookupFixture.randomChain(random, SYSTEM_BLOCKS);
    List<Integer> order = new ArrayList<>();
    for (int p = 0; p < PODS; p++) {
      fixture.spans.add(new ArrayList<>(List.of(ChainFeed.Span.prefix(system, SYSTEM_BLOCKS))));
      order.add(p);
    }
    fixture.entries = (long) PODS * SYSTEM_BLOCKS;
    fixture.distinctBlocks = SYSTEM_BLOCKS;
    while (fixture.entries < minEntries) {
      long[] chain = LookupFixture.randomChain(random, promptBlocks);
      System.arraycopy(system, 0, chain, 0, SYSTEM_BLOCKS);
      int holders = 1 + random.nextInt(PODS);
      Collections.shuffle(order, random);
      for (int i = 0; i < holders; i++) {
        fixture.spans.get(order.get(i)).add(new ChainFeed.Span(chain, SYSTEM_BLOCKS, promptBlocks));
      }
      fixture.entries += (long) holders * (promptBlocks - SYSTEM_BLOCKS);
      fixture.distinctBlocks += promptBlocks - SYSTEM_BLOCKS;
      fixture.prompts++;
    }
    return fixture;
  }

  List<ApplyPump.Feed> feeds(String model, int batchBlocks) {
    List<ApplyPump.Feed> feeds = new ArrayList<>();
    for (int p = 0; p < PODS; p++) {
      feeds.add(
          new ApplyPump.Feed(
              StreamId.of(model, pods.get(p)), new ChainFeed(spans.get(p), batchBlocks)));
    }
    return feeds;
  }

  void describe(ObjectNode json) {
    json.put("entries", entries);
    json.put("distinct_blocks", distinctBlocks);
    json.put("pods", PODS);
    json.put("prompts", prompts);
    json.put(
        "sharing",
        "every prompt starts with one shared "
            + SYSTEM_BLOCKS
            + "-block system prompt held by all "
            + PODS
            + " pods; each prompt's other blocks are held by a uniformly random 1 to "
            + PODS
            + " pods (mean 4.5 pods per block)");
    json.put("measured", "INFO used_memory after minus before, divided by (block, pod) entries");
  }
}
