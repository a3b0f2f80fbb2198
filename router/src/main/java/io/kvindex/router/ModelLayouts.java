package io.kvindex.router;

import io.kvindex.index.CacheLayout;
import io.kvindex.index.HybridHit;
import io.kvindex.index.HybridHit.Eagle;
import io.kvindex.index.ModelNotes;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cache-group layouts the ingesters recorded, per model, for scoring hybrid models: each
 * model's is read again every {@link #CHECK_EVERY} in the background (a request never waits for it;
 * until the first answer the model is scored as one group), and every {@link
 * #CHECK_UNRECORDED_EVERY} while none is recorded: a router asked about a model before its engines'
 * first stores reached the index (a fleet starting) would otherwise score a hybrid model by its
 * full-attention prefix, over-predicting, for a whole period. A layout this router cannot score (a
 * kind the hit rule does not know, a chunked-local group without its chunk size, a block size that
 * is not a multiple of the router's) is counted on every lookup and logged when it changes; such a
 * model is scored by its full-attention prefix, which over-predicts. A model whose engines run an
 * EAGLE draft model is scored by the hit rule even with one group (vLLM drops its last matched
 * block there too), from its first lookup. Thread-safe.
 */
final class ModelLayouts {
  private static final Logger log = LoggerFactory.getLogger(ModelLayouts.class);

  /** How often a model's layout is read again. */
  static final Duration CHECK_EVERY = Duration.ofSeconds(5);

  /** How often a model's layout is read again while none is recorded. */
  static final Duration CHECK_UNRECORDED_EVERY = Duration.ofMillis(250);

  /** Models tracked at most (default keys take any name); past it the map starts afresh. */
  static final int MAX_MODELS = 65_536;

  /**
   * What a model's lookups use: its layout (null: one group, or none recorded), the rule when it is
   * hybrid and scorable, and why not when it cannot be scored.
   */
  record Scoring(CacheLayout layout, HybridHit rule, String unscorable) {
    static final Scoring SINGLE = new Scoring(null, null, null);
  }

  /** A model's scoring, when it was last asked for, and whether a layout was recorded then. */
  private record Entry(long checkedAtNanos, Scoring scoring, boolean recorded) {
    long periodNanos() {
      return (recorded ? CHECK_EVERY : CHECK_UNRECORDED_EVERY).toNanos();
    }
  }

  private final ModelNotes index;
  private final LongSupplier ticker;
  private final Counter unscorableLookups;
  private final Map<String, Entry> models = new ConcurrentHashMap<>();

  ModelLayouts(ModelNotes index, LongSupplier ticker, MeterRegistry registry) {
    this.index = index;
    this.ticker = ticker;
    this.unscorableLookups =
        Counter.builder("kvindex.router.lookup.unscorable")
            .description(
                "Lookups of a hybrid model whose cache groups this router cannot score (see the"
                    + " log): scored by the full-attention prefix, which over-predicts")
            .register(registry);
  }

  /**
   * How to score {@code model}'s prompts keyed in blocks of {@code blockSize} tokens, by engines
   * running a draft model so ({@code eagle}): {@link Scoring#rule} non-null for a scorable hybrid
   * model, or any model with a draft.
   */
  Scoring scoring(String model, int blockSize, Eagle eagle) {
    long now = ticker.getAsLong();
    Entry entry = models.get(model);
    if (entry == null || now - entry.checkedAtNanos() >= entry.periodNanos()) {
      if (entry == null && models.size() >= MAX_MODELS) {
        models.clear();
      }
      Entry asking =
          entry == null
              ? new Entry(now, scoring(Optional.empty(), blockSize, eagle), false)
              : new Entry(now, entry.scoring(), entry.recorded());
      boolean mine =
          entry == null
              ? models.putIfAbsent(model, asking) == null
              : models.replace(model, entry, asking);
      if (mine) {
        read(model, blockSize, eagle);
      }
      entry = asking;
    }
    Scoring scoring = entry.scoring();
    if (scoring.unscorable() != null) {
      unscorableLookups.increment();
    }
    return scoring;
  }

  private void read(String model, int blockSize, Eagle eagle) {
    index
        .cacheLayoutAsync(model)
        .whenComplete(
            (layout, failure) -> {
              if (failure != null) {
                return; // what was read stays; asked again next period
              }
              Scoring now = scoring(layout, blockSize, eagle);
              Entry before = models.get(model);
              models.computeIfPresent(
                  model, (m, e) -> new Entry(e.checkedAtNanos(), now, layout.isPresent()));
              CacheLayout was = before == null ? null : before.scoring().layout();
              if (!Objects.equals(was, now.layout())) {
                logChange(model, now);
              }
            });
  }

  private static Scoring scoring(Optional<CacheLayout> recorded, int blockSize, Eagle eagle) {
    boolean hybrid = recorded.isPresent() && recorded.get().hybrid();
    if (!hybrid && eagle == Eagle.OFF) {
      return Scoring.SINGLE;
    }
    CacheLayout layout =
        recorded.filter(l -> !l.groups().isEmpty()).orElseGet(() -> oneGroup(blockSize));
    Optional<String> why = layout.unscorable(blockSize);
    if (why.isEmpty()) {
      try {
        return new Scoring(layout, new HybridHit(layout, blockSize, eagle), null);
      } catch (IllegalArgumentException e) {
        why = Optional.of(e.getMessage()); // a draft vLLM would not run beside these groups
      }
    }
    return new Scoring(layout, null, why.get());
  }

  /** The layout of a model with one full-attention group, none recorded. */
  private static CacheLayout oneGroup(int blockSize) {
    return new CacheLayout(List.of(new CacheLayout.Group(0, "full_attention", blockSize, 0)));
  }

  private static void logChange(String model, Scoring now) {
    if (now.layout() == null) {
      log.info("model '{}': one cache group; scored by its prefix", model);
    } else if (now.unscorable() != null) {
      log.warn(
          "model '{}': cache groups {} cannot be scored ({}); scored by the full-attention"
              + " prefix, which over-predicts its hits",
          model,
          now.layout().encode(),
          now.unscorable());
    } else {
      log.info(
          "model '{}': hybrid, cache groups {}; scored by vLLM's hit rule over the groups",
          model,
          now.layout().encode());
    }
  }
}
