package io.kvindex.ingester;

import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.event.Tiers;
import io.kvindex.index.CacheLayout;
import io.kvindex.index.CacheLayout.Group;
import io.kvindex.index.ModelNotes;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Each model's cache-group layout as its engines' GPU stores describe it ({@code group_idx}, {@code
 * kv_cache_spec_kind}, {@code block_size}, {@code kv_cache_spec_sliding_window}), recorded in the
 * index whenever it changes, so that routers score hybrid models with no configuration. A group
 * whose kind, window or block size changes (a model redeployed with another configuration) is
 * replaced; a Mamba group keeps its largest block size (its partial tail entries are published in
 * blocks of the hash block size). Thread-safe: stream workers observe their batches.
 */
public final class CacheLayouts {
  private static final Logger log = LoggerFactory.getLogger(CacheLayouts.class);

  /** Models tracked at most; past it the map starts afresh (each is recorded again). */
  static final int MAX_MODELS = 65_536;

  private final ModelNotes index;
  private final Counter changes;
  private final Counter unreadable;
  private final Map<String, CacheLayout> known = new ConcurrentHashMap<>();

  public CacheLayouts(ModelNotes index, MeterRegistry registry) {
    this.index = index;
    this.changes =
        Counter.builder("kvindex.ingester.cache.layout.changes")
            .description(
                "Changes to a model's cache-group layout seen in its stores (a first store, a"
                    + " redeploy with other groups), each recorded in the index for routers")
            .register(registry);
    this.unreadable =
        Counter.builder("kvindex.ingester.cache.layout.unreadable")
            .description(
                "Stores whose group description could not be kept (a malformed kind or size);"
                    + " ingest goes on")
            .register(registry);
  }

  /** Learns from {@code batch}'s GPU stores; records the model's layout if it changed. */
  public void observe(String model, KvEventBatch batch) {
    CacheLayout before = known.getOrDefault(model, CacheLayout.empty());
    CacheLayout now = before;
    for (KvEvent event : batch.events()) {
      if (event instanceof BlockStored s && s.blockSize() > 0 && Tiers.GPU.equals(s.tier())) {
        try {
          now = learn(now, s);
        } catch (IllegalArgumentException e) {
          unreadable.increment();
          log.debug("model '{}': a store's cache group cannot be kept: {}", model, e.getMessage());
        }
      }
    }
    if (now == before) {
      return;
    }
    if (known.size() >= MAX_MODELS && !known.containsKey(model)) {
      known.clear();
    }
    known.put(model, now);
    changes.increment();
    log.info("model '{}': cache groups {} (recorded for routers)", model, now.encode());
    CacheLayout recorded = now;
    index
        .noteCacheLayoutAsync(model, now)
        .whenComplete(
            (done, failure) -> {
              if (failure != null || !Boolean.TRUE.equals(done)) {
                known.remove(model, recorded); // recorded again with the next store
              }
            });
  }

  /** The layout this ingester last recorded for {@code model}. */
  public Optional<CacheLayout> layout(String model) {
    return Optional.ofNullable(known.get(model));
  }

  /** {@code layout} with what {@code store} says of its group ({@code layout} if nothing new). */
  static CacheLayout learn(CacheLayout layout, BlockStored store) {
    int window = store.kvCacheSpecSlidingWindow() == null ? 0 : store.kvCacheSpecSlidingWindow();
    int index = store.cacheGroup();
    // Every GPU store of a step is looked at: compare before making anything.
    for (Group h : layout.groups()) {
      if (h.index() == index
          && Objects.equals(h.specKind(), store.kvCacheSpecKind())
          && h.window() == window
          && (h.blockSize() == store.blockSize()
              || (h.kind() == CacheLayout.Kind.MAMBA && store.blockSize() < h.blockSize()))) {
        return layout;
      }
    }
    return layout.with(new Group(index, store.kvCacheSpecKind(), store.blockSize(), window));
  }
}
