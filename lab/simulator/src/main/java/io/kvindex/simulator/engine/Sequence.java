package io.kvindex.simulator.engine;

import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.ModelKind;
import io.kvindex.simulator.RequestTooLargeException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * One request's life on an {@link Engine}, step by step: the blocks it holds (in block order), the
 * tokens in its KV cache and the tokens it has generated. The instant {@link Engine#submit} and the
 * timed {@link StepScheduler} drive the same steps. Not thread-safe: the engine's lock guards every
 * call.
 */
final class Sequence {
  final InferenceRequest request;
  final int blockSize;
  final int[] tokens;
  final long[] hashes;
  final List<Integer> slots = new ArrayList<>();
  int kv;
  int cachedBlocks;
  private int generated;
  int scheduled;
  int hitTokens = -1;
  // A hybrid model's group 1: token positions whose window or state is kept (replay boundary,
  // junction); a sliding window's blocks held (by block index, null blocks absent), the blocks its
  // table covers and those caching has passed; a Mamba state's running block, the state blocks to
  // free at the next step.
  final TreeSet<Integer> keptEnds = new TreeSet<>();
  final NavigableMap<Integer, Integer> windowSlots = new TreeMap<>();
  int windowEnd;
  int windowCached;
  int stateSlot = -1;
  final List<Integer> spentStates = new ArrayList<>();

  /**
   * A sequence for {@code request} on pod {@code pod}'s engine, hashed with {@code hasher}; throws
   * {@link RequestTooLargeException} when it cannot fit in a pool of {@code capacity} blocks.
   */
  Sequence(
      InferenceRequest request,
      int blockSize,
      ModelKind kind,
      ChainHasher hasher,
      int capacity,
      String pod) {
    this.request = request;
    this.blockSize = blockSize;
    this.tokens = request.allTokens();
    int computed = tokens.length - 1;
    int needed = Engine.ceilDiv(computed, blockSize);
    if (kind == ModelKind.SLIDING_WINDOW) {
      needed *= 2; // a prefill holds each block in both groups until the window moves on
    } else if (kind == ModelKind.MAMBA) {
      needed += 3; // the state hit, the running state and a kept state
    }
    if (needed > capacity) {
      throw new RequestTooLargeException(
          "request needs "
              + needed
              + " KV blocks of "
              + blockSize
              + " tokens but pod "
              + pod
              + " has "
              + capacity);
    }
    int fullBlocks = computed / blockSize;
    this.hashes =
        hasher.hashes(
            Arrays.copyOf(tokens, fullBlocks * blockSize), request.loraName(), request.cacheSalt());
  }

  InferenceRequest request() {
    return request;
  }

  /** Tokens whose KV the sequence holds now (0 while waiting or after a preemption). */
  int kvTokens() {
    return kv;
  }

  /** Output tokens generated so far. */
  int generated() {
    return generated;
  }

  /** Output tokens it generates in all. */
  int outputs() {
    return tokens.length - request.promptLength();
  }

  /** The KV tokens it needs before its next token comes out: the prompt, then one per token. */
  int target() {
    return request.promptLength() + generated;
  }

  /** Prompt tokens its first admission found cached (-1 before it). */
  int hitTokens() {
    return hitTokens;
  }

  boolean finished() {
    return generated >= outputs();
  }

  /** The step ran: its scheduled tokens are in the KV cache; returns true if a token came out. */
  boolean advance() {
    kv += scheduled;
    scheduled = 0;
    if (kv >= target()) {
      generated++;
      return true;
    }
    return false;
  }

  /** Forgets the blocks it held: the engine has freed them (an end or a preemption). */
  void released() {
    slots.clear();
    windowSlots.clear();
    spentStates.clear();
    stateSlot = -1;
    keptEnds.clear();
    windowEnd = 0;
    windowCached = 0;
    kv = 0;
    cachedBlocks = 0;
    scheduled = 0;
  }
}
