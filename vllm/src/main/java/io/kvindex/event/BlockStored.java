package io.kvindex.event;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * New full blocks entered a tier of a pod's cache.
 *
 * <p>Nullable fields are {@code null} when the payload carried nil or (map era) left the key out.
 * {@code extraKeys} is {@code null} when absent; otherwise it has one entry per hash, an empty list
 * standing for a nil entry.
 *
 * <p>Hashes and token ids are held in arrays ({@link BlockHashes}, {@link TokenIds}): a decoded
 * 256-block store takes about its payload's size, not several times it. A consumer that keys blocks
 * by the engine's hashes may decode stores without their token ids ({@link
 * io.kvindex.wire.KvEventDecoder#decodeWithoutTokenIds}).
 *
 * @param blockHashes the blocks' external hashes, unsigned 64-bit
 * @param parentBlockHash the hash of the block before the first one, or {@code null} at a chain
 *     start
 * @param tokenIds the tokens of the newly cached span
 * @param blockSize tokens per block ({@code 0} for connector placeholders)
 * @param loraId deprecated LoRA adapter int id
 * @param medium the tier as sent ({@code null} means GPU, see {@link Tiers})
 * @param loraName the LoRA adapter name that entered the hash
 * @param extraKeys per-block extra hash keys, or {@code null}
 * @param groupIdx the KV-cache group (hybrid models)
 * @param kvCacheSpecKind the group's attention kind, for example {@code full_attention}
 * @param kvCacheSpecSlidingWindow the group's sliding window
 * @param locality whether the tier is the publishing engine's own ({@code LOCAL}) or one shared
 *     with other engines ({@code REMOTE}), as sent; any other value is kept as text (see {@link
 *     Localities})
 * @param ownership the secondary tier that produced the store, as sent
 * @param sessionId the request context (session) whose work stored or reused the blocks
 */
public record BlockStored(
    BlockHashes blockHashes,
    Long parentBlockHash,
    TokenIds tokenIds,
    int blockSize,
    Integer loraId,
    String medium,
    String loraName,
    List<List<ExtraKey>> extraKeys,
    Integer groupIdx,
    String kvCacheSpecKind,
    Integer kvCacheSpecSlidingWindow,
    String locality,
    String ownership,
    String sessionId)
    implements KvEvent {

  public BlockStored {
    Objects.requireNonNull(blockHashes, "blockHashes");
    Objects.requireNonNull(tokenIds, "tokenIds");
    if (blockSize < 0) {
      throw new IllegalArgumentException("blockSize must be >= 0, got " + blockSize);
    }
    if (extraKeys != null) {
      List<List<ExtraKey>> copy = new ArrayList<>(extraKeys.size());
      for (List<ExtraKey> keys : extraKeys) {
        copy.add(keys == null ? List.of() : List.copyOf(keys));
      }
      extraKeys = Collections.unmodifiableList(copy);
    }
  }

  /** A store without the storage-tier fields ({@code locality}, {@code ownership}, session). */
  public BlockStored(
      BlockHashes blockHashes,
      Long parentBlockHash,
      TokenIds tokenIds,
      int blockSize,
      Integer loraId,
      String medium,
      String loraName,
      List<List<ExtraKey>> extraKeys,
      Integer groupIdx,
      String kvCacheSpecKind,
      Integer kvCacheSpecSlidingWindow) {
    this(
        blockHashes,
        parentBlockHash,
        tokenIds,
        blockSize,
        loraId,
        medium,
        loraName,
        extraKeys,
        groupIdx,
        kvCacheSpecKind,
        kvCacheSpecSlidingWindow,
        null,
        null,
        null);
  }

  /** A store from lists (copied into arrays); the other fields as in the canonical constructor. */
  public BlockStored(
      List<Long> blockHashes,
      Long parentBlockHash,
      List<Integer> tokenIds,
      int blockSize,
      Integer loraId,
      String medium,
      String loraName,
      List<List<ExtraKey>> extraKeys,
      Integer groupIdx,
      String kvCacheSpecKind,
      Integer kvCacheSpecSlidingWindow,
      String locality,
      String ownership,
      String sessionId) {
    this(
        BlockHashes.copyOf(Objects.requireNonNull(blockHashes, "blockHashes")),
        parentBlockHash,
        TokenIds.copyOf(Objects.requireNonNull(tokenIds, "tokenIds")),
        blockSize,
        loraId,
        medium,
        loraName,
        extraKeys,
        groupIdx,
        kvCacheSpecKind,
        kvCacheSpecSlidingWindow,
        locality,
        ownership,
        sessionId);
  }

  /** A store from lists without the storage-tier fields ({@code locality}, ownership, session). */
  public BlockStored(
      List<Long> blockHashes,
      Long parentBlockHash,
      List<Integer> tokenIds,
      int blockSize,
      Integer loraId,
      String medium,
      String loraName,
      List<List<ExtraKey>> extraKeys,
      Integer groupIdx,
      String kvCacheSpecKind,
      Integer kvCacheSpecSlidingWindow) {
    this(
        blockHashes,
        parentBlockHash,
        tokenIds,
        blockSize,
        loraId,
        medium,
        loraName,
        extraKeys,
        groupIdx,
        kvCacheSpecKind,
        kvCacheSpecSlidingWindow,
        null,
        null,
        null);
  }

  /** A store with only the fields every era carries; the rest nil. */
  public static BlockStored of(
      List<Long> blockHashes, Long parentBlockHash, List<Integer> tokenIds, int blockSize) {
    return new BlockStored(
        blockHashes,
        parentBlockHash,
        tokenIds,
        blockSize,
        null,
        null,
        null,
        null,
        null,
        null,
        null);
  }

  /** The same store without its token ids (for consumers that key blocks by engine hashes). */
  public BlockStored withoutTokenIds() {
    return tokenIds.isEmpty()
        ? this
        : new BlockStored(
            blockHashes,
            parentBlockHash,
            TokenIds.empty(),
            blockSize,
            loraId,
            medium,
            loraName,
            extraKeys,
            groupIdx,
            kvCacheSpecKind,
            kvCacheSpecSlidingWindow,
            locality,
            ownership,
            sessionId);
  }

  /** The normalised tier ({@code GPU} when the medium was nil). */
  public String tier() {
    return Tiers.normalize(medium);
  }

  /**
   * Whether the blocks are on a tier shared with other engines ({@code locality} {@code REMOTE},
   * any case); {@code false} when the locality is local, absent or a value this version does not
   * know.
   */
  public boolean remote() {
    return Localities.isRemote(locality);
  }

  /** The KV-cache group as the index keys it (see {@link KvEvent#cacheGroup}). */
  public int cacheGroup() {
    return KvEvent.cacheGroup(groupIdx);
  }

  /**
   * Whether the store carries exactly {@code blockSize} token ids per block (token keys need it).
   */
  public boolean carriesEveryToken() {
    return blockSize > 0 && tokenIds.size() == (long) blockHashes.size() * blockSize;
  }
}
