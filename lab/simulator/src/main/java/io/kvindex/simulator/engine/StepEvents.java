package io.kvindex.simulator.engine;

import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.ExtraKey;
import io.kvindex.event.KvEvent;
import io.kvindex.event.Tiers;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.ModelKind;
import java.util.ArrayList;
import java.util.List;

/**
 * The events of an {@link Engine}'s current step, in the order vLLM's scheduler sends them: those
 * queued while idle (AllBlocksCleared), the block pool's, then the CPU connector's. Builds each
 * event as vLLM's pool or connector would. Not thread-safe: the engine's lock guards every call.
 */
final class StepEvents {
  static final String CPU = "CPU";
  private static final String FULL_ATTENTION = "full_attention";

  private final ModelKind kind;
  private final List<KvEvent> pending = new ArrayList<>();
  private final List<KvEvent> poolEvents = new ArrayList<>();
  private final List<KvEvent> connectorEvents = new ArrayList<>();

  StepEvents(ModelKind kind) {
    this.kind = kind;
  }

  /** Queues an event that leads the next step's batch (AllBlocksCleared after a reset). */
  void queue(KvEvent event) {
    pending.add(event);
  }

  /** The pool evicted a GPU block of cache group {@code group}. */
  void gpuRemoved(long hash, int group) {
    poolEvents.add(new BlockRemoved(List.of(hash), Tiers.GPU, group));
  }

  /** The CPU connector evicted a block. */
  void cpuRemoved(long hash) {
    connectorEvents.add(new BlockRemoved(List.of(hash), CPU, 0));
  }

  /** The CPU connector stored a GPU-evicted block: consecutive stores share one placeholder. */
  void cpuStored(long hash) {
    int last = connectorEvents.size() - 1;
    if (last >= 0 && connectorEvents.get(last) instanceof BlockStored s && CPU.equals(s.medium())) {
      List<Long> merged = new ArrayList<>(s.blockHashes());
      merged.add(hash);
      connectorEvents.set(last, placeholder(merged));
    } else {
      connectorEvents.add(placeholder(List.of(hash)));
    }
  }

  private static BlockStored placeholder(List<Long> blockHashes) {
    return new BlockStored(
        blockHashes, null, List.of(), 0, null, CPU, null, null, 0, FULL_ATTENTION, null);
  }

  /** The pool cached full-attention blocks [from, to) of the sequence: one BlockStored. */
  void stored(Sequence s, int from, int to) {
    if (from >= to) {
      return;
    }
    int blockSize = s.blockSize;
    List<Long> run = new ArrayList<>(to - from);
    List<Integer> runTokens = new ArrayList<>((to - from) * blockSize);
    List<List<ExtraKey>> extraKeys = new ArrayList<>(to - from);
    for (int b = from; b < to; b++) {
      run.add(s.hashes[b]);
      extraKeys.add(extraKeys(s.request, b));
    }
    for (int t = from * blockSize; t < to * blockSize; t++) {
      runTokens.add(s.tokens[t]);
    }
    poolEvents.add(
        new BlockStored(
            run,
            from == 0 ? null : s.hashes[from - 1],
            runTokens,
            blockSize,
            loraId(s.request.loraName()),
            Tiers.GPU,
            s.request.loraName(),
            extraKeys,
            0,
            FULL_ATTENTION,
            null));
  }

  /** The pool cached blocks of group 1 covering tokens [fromToken, toToken): one BlockStored. */
  void groupStored(
      Sequence s,
      List<Long> hashes,
      Long parent,
      int fromToken,
      int toToken,
      int blockSize,
      List<List<ExtraKey>> extraKeys) {
    List<Integer> tokens = new ArrayList<>(toToken - fromToken);
    for (int t = fromToken; t < toToken; t++) {
      tokens.add(s.tokens[t]);
    }
    poolEvents.add(
        new BlockStored(
            hashes,
            parent,
            tokens,
            blockSize,
            loraId(s.request.loraName()),
            Tiers.GPU,
            s.request.loraName(),
            extraKeys,
            1,
            kind.specKind(),
            kind.window()));
  }

  boolean isEmpty() {
    return pending.isEmpty() && poolEvents.isEmpty() && connectorEvents.isEmpty();
  }

  /** The step's events, in order, and empties the step; an empty list when it has none. */
  List<KvEvent> drain() {
    List<KvEvent> events = new ArrayList<>(pending.size() + poolEvents.size());
    events.addAll(pending);
    events.addAll(poolEvents);
    events.addAll(connectorEvents);
    clear();
    return events;
  }

  void clear() {
    pending.clear();
    poolEvents.clear();
    connectorEvents.clear();
  }

  /** The extra keys vLLM hashes into block {@code block}: the LoRA name, and block 0's salt. */
  static List<ExtraKey> extraKeys(InferenceRequest request, int block) {
    List<ExtraKey> keys = new ArrayList<>(2);
    if (request.loraName() != null) {
      keys.add(new ExtraKey.Text(request.loraName()));
    }
    if (block == 0 && request.cacheSalt() != null && !request.cacheSalt().isEmpty()) {
      keys.add(new ExtraKey.Text(request.cacheSalt()));
    }
    return keys;
  }

  /** A stable positive int id for a LoRA name, standing in for vLLM's adapter int id. */
  static Integer loraId(String loraName) {
    return loraName == null ? null : 1 + Math.floorMod(loraName.hashCode(), 1 << 20);
  }
}
