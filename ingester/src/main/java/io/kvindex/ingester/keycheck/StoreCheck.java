package io.kvindex.ingester.keycheck;

import io.kvindex.event.BlockStored;
import io.kvindex.event.ExtraKey;
import io.kvindex.hash.BlockHasher;
import io.kvindex.hash.HashAlgorithm;
import io.kvindex.index.KeyMode;
import io.kvindex.index.KeySpec;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Recomputes one {@code BlockStored}'s block hashes from its token ids and extra keys with a
 * model's configured keys and, when they do not reproduce the published hashes, with every known
 * form, to name the one the engines use. Pure; thread-safe (stateless).
 */
final class StoreCheck {
  /*
   * Implementation notes.
   *
   * Only a store that starts a chain (no parent) can be recomputed: a block's hash chains the FULL
   * digest of its parent (32 bytes for sha256), of which events carry only the last 8 bytes. Such
   * stores are every prompt's first prefill and every full-report store, so a fleet sends plenty.
   * At most MAX_BLOCKS blocks are recomputed per store: a mismatch shows in the first.
   *
   * The extra keys are the event's own (extra_keys, vLLM v0.17 on), else its LoRA name on every
   * block; an older engine's cache salt or multimodal keys are not in its events, so such a store
   * recomputes differently: the verdict is a majority of recent stores, not one (KeyChecks).
   *
   * Hybrid models hash at a finer granularity h than a group's block size k*h, and the group
   * publishes, for its block j, the fine hash at index (j+1)*k - 1 (vLLM's
   * BlockHashListWithBlockSize). So a block size that divides the event's is tried that way; the
   * fine blocks' extra keys are only known when the event has none.
   *
   * Candidates: every algorithm kvindex reproduces, with vLLM's default seed (where the algorithm
   * has one) and with the configured seed, at the configured block size and at the event's. An
   * engine hashing xxhash without PYTHONHASHSEED matches none of them: nobody can reproduce it.
   */

  /** Blocks recomputed per store at most. */
  static final int MAX_BLOCKS = 16;

  /**
   * One store's finding.
   *
   * @param matches whether the configured keys reproduce the published hashes (false when none are
   *     configured)
   * @param configured the keys routers noted for the model, or null
   * @param engines keys that reproduce the published hashes, or null when no known form does
   * @param eventBlockSize tokens per block in the event
   */
  record Finding(boolean matches, KeySpec configured, KeySpec engines, int eventBlockSize) {}

  private StoreCheck() {}

  /**
   * Checks {@code store} of a model indexed in {@code streamMode} against {@code configured} (null
   * when no router noted keys for the model: the finding then only names the engines' form).
   *
   * @return empty when the store cannot be checked: not a chain start (engine keys), no token ids,
   *     a block size or group kind the check does not judge
   */
  static Optional<Finding> check(BlockStored store, KeySpec configured, KeyMode streamMode) {
    if (configured != null && configured.mode() != streamMode) {
      return Optional.empty(); // inspect reports a mode mismatch itself
    }
    if (!store.carriesEveryToken()
        || store.blockHashes().isEmpty()
        || !fullAttention(store)
        || (store.extraKeys() != null && store.extraKeys().size() != store.blockHashes().size())) {
      return Optional.empty();
    }
    int eventBlockSize = store.blockSize();
    if (streamMode == KeyMode.TOKEN) {
      KeySpec engines = KeySpec.token(eventBlockSize);
      return Optional.of(
          new Finding(engines.equals(configured), configured, engines, eventBlockSize));
    }
    if (store.parentBlockHash() != null
        || (store.extraKeys() == null && store.loraName() == null && store.loraId() != null)) {
      return Optional.empty();
    }
    Block blocks = Block.of(store);
    boolean matches = configured != null && blocks.reproducedBy(configured);
    if (matches) {
      return Optional.of(new Finding(true, configured, configured, eventBlockSize));
    }
    for (KeySpec candidate : candidates(configured, eventBlockSize)) {
      if (!candidate.equals(configured) && blocks.reproducedBy(candidate)) {
        return Optional.of(new Finding(false, configured, candidate, eventBlockSize));
      }
    }
    return Optional.of(new Finding(false, configured, null, eventBlockSize));
  }

  /** A store of a full-attention group (or of an engine that does not say). */
  private static boolean fullAttention(BlockStored store) {
    String kind = store.kvCacheSpecKind();
    return kind == null || kind.equals("full_attention");
  }

  /**
   * The forms tried, most likely first: the configured algorithm, then the others; the configured
   * seed, then vLLM's default; the configured block size, then the event's.
   */
  static List<KeySpec> candidates(KeySpec configured, int eventBlockSize) {
    List<HashAlgorithm> algorithms = new ArrayList<>();
    List<String> seeds = new ArrayList<>();
    Set<Integer> blockSizes = new LinkedHashSet<>();
    if (configured != null) {
      algorithms.add(configured.hashAlgorithm());
      seeds.add(configured.seed());
      if (eventBlockSize % configured.blockSize() == 0) {
        blockSizes.add(configured.blockSize());
      }
    }
    for (HashAlgorithm algorithm : HashAlgorithm.values()) {
      if (!algorithms.contains(algorithm)) {
        algorithms.add(algorithm);
      }
    }
    if (!seeds.contains(null)) {
      seeds.add(null);
    }
    blockSizes.add(eventBlockSize);
    List<KeySpec> out = new ArrayList<>();
    for (HashAlgorithm algorithm : algorithms) {
      for (String seed : seeds) {
        if (seed == null && algorithm.defaultSeed().isEmpty()) {
          continue; // its engines draw a random seed: nothing to try
        }
        for (int blockSize : blockSizes) {
          out.add(KeySpec.engine(algorithm, seed, blockSize));
        }
      }
    }
    return out;
  }

  /** The first blocks of a store, as hashed. */
  private record Block(int[] tokens, List<List<ExtraKey>> extraKeys, long[] published, int size) {

    static Block of(BlockStored store) {
      int blocks = Math.min(MAX_BLOCKS, store.blockHashes().size());
      int size = store.blockSize();
      int[] tokens = new int[blocks * size];
      for (int i = 0; i < tokens.length; i++) {
        tokens[i] = store.tokenIds().get(i);
      }
      long[] published = new long[blocks];
      List<List<ExtraKey>> extraKeys = new ArrayList<>(blocks);
      for (int i = 0; i < blocks; i++) {
        published[i] = store.blockHashes().get(i);
        extraKeys.add(extraKeys(store, i));
      }
      return new Block(tokens, extraKeys, published, size);
    }

    private static List<ExtraKey> extraKeys(BlockStored store, int block) {
      if (store.extraKeys() != null) {
        return store.extraKeys().get(block);
      }
      return store.loraName() == null ? List.of() : List.of(new ExtraKey.Text(store.loraName()));
    }

    boolean reproducedBy(KeySpec keys) {
      if (size % keys.blockSize() != 0) {
        return false;
      }
      int k = size / keys.blockSize();
      List<List<ExtraKey>> fine = extraKeys;
      if (k > 1) {
        if (extraKeys.stream().anyMatch(e -> !e.isEmpty())) {
          return false; // which fine block carries which key is not in the event
        }
        fine = new ArrayList<>(published.length * k);
        for (int i = 0; i < published.length * k; i++) {
          fine.add(List.of());
        }
      }
      long[] hashes =
          BlockHasher.create(keys.hashAlgorithm(), keys.seed(), keys.blockSize())
              .blockHashes(tokens, fine);
      for (int j = 0; j < published.length; j++) {
        if (hashes[(j + 1) * k - 1] != published[j]) {
          return false;
        }
      }
      return true;
    }
  }
}
