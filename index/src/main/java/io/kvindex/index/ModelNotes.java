package io.kvindex.index;

import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * What writers and readers note about each model, small records beside the index: the cache-group
 * layout the ingesters saw, the keys routers read with, and what the ingesters' key check found.
 * Best effort: a note that fails is written again later, and a reader that finds none goes on
 * without it.
 *
 * <p>As in every role of the {@link PrefixIndex}, a method named {@code ...Async} returns a future
 * and never blocks; the others block. Implementations are thread-safe.
 */
public interface ModelNotes {

  /**
   * Records {@code model}'s cache-group layout as its engines' events show it, replacing the one
   * recorded before (a model redeployed with other groups). Best effort: one small write.
   *
   * @return true once recorded, false if Redis was unavailable
   */
  CompletableFuture<Boolean> noteCacheLayoutAsync(String model, CacheLayout layout);

  /**
   * The cache-group layout the ingesters last recorded for {@code model}: one read.
   *
   * @return the layout, empty when none is recorded (no store seen yet, or a model of one group
   *     before any ingester of this version saw it); a failed future if Redis did not answer
   */
  CompletableFuture<Optional<CacheLayout>> cacheLayoutAsync(String model);

  /**
   * Notes in the index, for {@code kvindex inspect}, how this reader keys a model's prompts.
   * Writers note their key modes themselves, as they apply; a router notes its models when it
   * starts. Best effort: one small write, to a key a router's Redis user may write.
   *
   * @param model the model, or null for every model the reader has no keys of its own for
   * @param modelKeys the keys in the command line's form: {@code engine:<algorithm>:<seed>:<block
   *     size>} or {@code token:<block size>}
   * @return true once noted, false if Redis was unavailable
   */
  CompletableFuture<Boolean> noteReaderKeysAsync(String model, String modelKeys);

  /**
   * The keys routers last noted ({@link #noteReaderKeysAsync}) for each model: model to keys in the
   * command line's form, the model {@code ""} for routers' default keys. One read, for the
   * ingesters' key check.
   *
   * @return the notes; empty when Redis did not answer
   */
  CompletableFuture<Optional<Map<String, String>>> readerKeysAsync();

  /**
   * Keeps what the ingesters' key check found for {@code model}, replacing the model's previous
   * note. Best effort: one small write.
   *
   * @return true once kept, false if Redis was unavailable
   */
  CompletableFuture<Boolean> noteKeyCheckAsync(String model, KeyCheckNote note);

  /**
   * What the ingesters' key check last found for {@code model}: one read.
   *
   * @return the note, empty when there is none; a failed future if Redis did not answer
   */
  CompletableFuture<Optional<KeyCheckNote>> keyCheckAsync(String model);
}
