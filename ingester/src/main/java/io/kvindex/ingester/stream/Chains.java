package io.kvindex.ingester.stream;

import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;

/**
 * The parents of the blocks an {@link EvictionModel} has yet to store (pending or waiting), and
 * those blocks by the parent they were stored under, in the order they were linked. Not
 * thread-safe.
 */
final class Chains {
  private final Map<Long, Long> parentOf = new HashMap<>();
  private final Map<Long, Set<Long>> under = new HashMap<>();

  /** The block waits for (or is stored after) {@code parent}; null: it heads its chain. */
  void link(Long block, Long parent) {
    parentOf.put(block, parent);
    if (parent != null) {
      under.computeIfAbsent(parent, k -> new LinkedHashSet<>()).add(block);
    }
  }

  /** The block is no longer pending or waiting: it leaves its parent's children. */
  void unlink(Long block) {
    Long parent = parentOf.remove(block);
    Set<Long> siblings = parent == null ? null : under.get(parent);
    if (siblings != null) {
      siblings.remove(block);
      if (siblings.isEmpty()) {
        under.remove(parent);
      }
    }
  }

  /** The parent the block was linked under, or null. */
  Long parent(Long block) {
    return parentOf.get(block);
  }

  /** The blocks linked under {@code parent}, in the order they were linked. */
  Set<Long> children(Long parent) {
    return under.getOrDefault(parent, Set.of());
  }
}
