package io.kvindex.router;

import io.kvindex.index.KeyCheckNote;
import io.kvindex.index.KeySpec;
import io.kvindex.index.ModelNotes;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The keys a router adopts from the ingesters' key check ({@code adoptEngineKeys}): for each model,
 * the form the check found reproducing the engines' published hashes when it differs from the
 * router's own keys for the model (in the same key mode). Each model's note is read again every
 * {@link #CHECK_EVERY}, in the background: a request never waits for it. Thread-safe.
 */
final class AdoptedKeys {
  private static final Logger log = LoggerFactory.getLogger(AdoptedKeys.class);

  /** How often a model's note is read again. */
  static final Duration CHECK_EVERY = Duration.ofSeconds(10);

  /** A note older than this is not followed: no ingester checks the model any more. */
  static final Duration NOTE_TOO_OLD = Duration.ofMinutes(2);

  /** Models tracked at most (default keys take any name); past it the map starts afresh. */
  static final int MAX_MODELS = 65_536;

  /** When the model's note was last asked for, and the keyer adopted from it (null: none). */
  private record Entry(long checkedAtNanos, BlockKeyer keyer) {}

  private final ModelNotes index;
  private final LongSupplier ticker;
  private final LongSupplier wallMillis;
  private final Map<String, Entry> models = new ConcurrentHashMap<>();
  private final Map<ModelKeys, BlockKeyer> keyers = new ConcurrentHashMap<>();

  AdoptedKeys(ModelNotes index, LongSupplier ticker, LongSupplier wallMillis) {
    this.index = index;
    this.ticker = ticker;
    this.wallMillis = wallMillis;
  }

  /** The keyer for {@code model}: the adopted one if any, else {@code own}. */
  BlockKeyer keyer(String model, BlockKeyer own) {
    long now = ticker.getAsLong();
    Entry entry = models.get(model);
    if (entry == null || now - entry.checkedAtNanos() >= CHECK_EVERY.toNanos()) {
      if (entry == null && models.size() >= MAX_MODELS) {
        models.clear();
      }
      Entry asking = new Entry(now, entry == null ? null : entry.keyer());
      boolean mine =
          entry == null
              ? models.putIfAbsent(model, asking) == null
              : models.replace(model, entry, asking);
      if (mine) {
        read(model, own);
      }
      entry = asking;
    }
    return entry.keyer() == null ? own : entry.keyer();
  }

  private void read(String model, BlockKeyer own) {
    index
        .keyCheckAsync(model)
        .whenComplete(
            (note, failure) -> {
              if (failure != null) {
                return; // what was adopted stays; asked again next period
              }
              BlockKeyer adopted =
                  note.flatMap(n -> adoptable(n, own.config()))
                      .map(k -> keyers.computeIfAbsent(k, BlockKeyer::new))
                      .orElse(null);
              Entry before = models.get(model);
              models.computeIfPresent(model, (m, e) -> new Entry(e.checkedAtNanos(), adopted));
              BlockKeyer was = before == null ? null : before.keyer();
              if (!Objects.equals(config(was), config(adopted))) {
                logChange(model, own, adopted);
              }
            });
  }

  private static ModelKeys config(BlockKeyer keyer) {
    return keyer == null ? null : keyer.config();
  }

  private static void logChange(String model, BlockKeyer own, BlockKeyer adopted) {
    if (adopted != null) {
      log.warn(
          "model '{}': keyed as {} from now on, the form the ingesters' key check found its"
              + " engines hashing with, instead of {} as configured (adopt-engine-keys); configure"
              + " it so to make this permanent",
          model,
          adopted.config().spec(),
          own.config().spec());
    } else {
      log.info("model '{}': keyed as configured ({}) again", model, own.config().spec());
    }
  }

  /** The keys {@code note} says the engines use, when they differ from {@code own}. */
  private Optional<ModelKeys> adoptable(KeyCheckNote note, ModelKeys own) {
    if (note.engines() == null
        || wallMillis.getAsLong() - note.atMillis() > NOTE_TOO_OLD.toMillis()) {
      return Optional.empty();
    }
    KeySpec engines;
    try {
      engines = KeySpec.parse(note.engines());
    } catch (IllegalArgumentException e) {
      return Optional.empty(); // a form of another release
    }
    if (engines.mode() != own.mode() || engines.equals(own.keySpec())) {
      return Optional.empty();
    }
    return Optional.of(ModelKeys.of(engines).withEagle(own.eagle()));
  }
}
