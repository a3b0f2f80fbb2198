package io.kvindex.hash;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;

/**
 * What a request adds to its block hashes besides the token ids, as vLLM's {@code
 * generate_block_hash_extra_keys} derives them: the LoRA adapter name (every block), multimodal
 * items (every block they overlap, as {@code [identifier, offset - blockStart]}), the cache salt
 * (the block starting at token 0 only) and per-block prompt-embeds digests, in that order. A block
 * with none of them hashes with a null extra-keys item. Older engines' formats: {@link
 * Builder#loraId} and {@link Builder#multimodalIdentifiersOnly}.
 *
 * <p>Multimodal keys are those of vLLM hashing the prompt in one pass from block 0 (what a router
 * does): each item goes to every block it overlaps. Immutable and thread-safe.
 */
public final class BlockHashInputs {
  private static final BlockHashInputs NONE = new Builder().build();

  private final String loraName;
  private final byte[] loraUtf8;
  private final Integer loraId;
  private final boolean multimodalOffsets;
  private final String cacheSalt;
  private final byte[] saltUtf8;
  private final List<MultimodalItem> multimodal;
  private final byte[][] multimodalUtf8;
  private final List<byte[]> promptEmbedsDigests;

  private BlockHashInputs(Builder builder) {
    loraName = builder.loraName;
    loraUtf8 = loraName == null ? null : loraName.getBytes(StandardCharsets.UTF_8);
    loraId = builder.loraId;
    if (loraName != null && loraId != null) {
      throw new IllegalArgumentException(
          "set loraName (vLLM v0.11.1 and later) or loraId (earlier engines), not both");
    }
    multimodalOffsets = builder.multimodalOffsets;
    cacheSalt = builder.cacheSalt;
    // vLLM adds the salt only when it is truthy, so an empty salt changes nothing.
    saltUtf8 =
        cacheSalt == null || cacheSalt.isEmpty()
            ? null
            : cacheSalt.getBytes(StandardCharsets.UTF_8);
    List<MultimodalItem> items = new ArrayList<>(builder.multimodal);
    items.sort(Comparator.comparingLong(MultimodalItem::offset));
    multimodal = List.copyOf(items);
    multimodalUtf8 = new byte[items.size()][];
    for (int i = 0; i < items.size(); i++) {
      multimodalUtf8[i] = items.get(i).identifier().getBytes(StandardCharsets.UTF_8);
    }
    List<byte[]> digests = new ArrayList<>(builder.promptEmbedsDigests.size());
    for (byte[] digest : builder.promptEmbedsDigests) {
      digests.add(digest == null ? null : digest.clone());
    }
    promptEmbedsDigests = digests;
  }

  /** No extra keys: every block hashes with a null extra-keys item. */
  public static BlockHashInputs none() {
    return NONE;
  }

  /** A builder with no extra keys set. */
  public static Builder builder() {
    return new Builder();
  }

  /** The LoRA adapter name, or {@code null} when the request uses none. */
  public String loraName() {
    return loraName;
  }

  /** The LoRA adapter int id hashed by engines before v0.11.1, or {@code null}. */
  public Integer loraId() {
    return loraId;
  }

  /** The cache salt, or {@code null}. */
  public String cacheSalt() {
    return cacheSalt;
  }

  /** The multimodal items, sorted by offset. */
  public List<MultimodalItem> multimodal() {
    return multimodal;
  }

  /** True when no block gets any extra key. */
  public boolean isEmpty() {
    return loraUtf8 == null
        && loraId == null
        && saltUtf8 == null
        && multimodal.isEmpty()
        && promptEmbedsDigests.stream().allMatch(Objects::isNull);
  }

  /**
   * A multimodal input occupying prompt tokens {@code [offset, offset + length)}.
   *
   * @param identifier the item's hash as vLLM computes it (LoRA-prefixed when that applies)
   * @param offset the position of its first placeholder token in the prompt
   * @param length the number of placeholder tokens
   */
  public record MultimodalItem(String identifier, long offset, long length) {
    /** Validates; the record is immutable and thread-safe. */
    public MultimodalItem {
      Objects.requireNonNull(identifier, "identifier");
      if (offset < 0) {
        throw new IllegalArgumentException("offset must be >= 0, got " + offset);
      }
      if (length <= 0) {
        throw new IllegalArgumentException("length must be > 0, got " + length);
      }
    }
  }

  /** Builds {@link BlockHashInputs}. Not thread-safe. */
  public static final class Builder {
    private String loraName;
    private Integer loraId;
    private boolean multimodalOffsets = true;
    private String cacheSalt;
    private final List<MultimodalItem> multimodal = new ArrayList<>();
    private final List<byte[]> promptEmbedsDigests = new ArrayList<>();

    private Builder() {}

    /** The LoRA adapter name ({@code lora_request.lora_name}), or {@code null} for none. */
    public Builder loraName(String loraName) {
      this.loraName = loraName;
      return this;
    }

    /**
     * The LoRA adapter int id ({@code lora_request.lora_int_id}), or {@code null}: what engines
     * before vLLM v0.11.1 (PR #27211) hashed instead of the name. Exclusive with {@link #loraName}.
     */
    public Builder loraId(Integer loraId) {
      this.loraId = loraId;
      return this;
    }

    /**
     * Hash multimodal items as the bare identifier, as engines before vLLM v0.18 (PR #36708) did,
     * instead of {@code [identifier, offset]}.
     */
    public Builder multimodalIdentifiersOnly() {
      this.multimodalOffsets = false;
      return this;
    }

    /** The request's cache salt, or {@code null}; it enters block 0 only. */
    public Builder cacheSalt(String cacheSalt) {
      this.cacheSalt = cacheSalt;
      return this;
    }

    /** Adds a multimodal item; items may be added in any order. */
    public Builder multimodal(String identifier, long offset, long length) {
      multimodal.add(new MultimodalItem(identifier, offset, length));
      return this;
    }

    /**
     * The SHA-256 digests of each block's slice of the prompt embeddings, entry {@code i} for block
     * {@code i} of the request; a {@code null} entry or a block past the list gets no digest.
     */
    public Builder promptEmbedsDigests(List<byte[]> digests) {
      promptEmbedsDigests.clear();
      promptEmbedsDigests.addAll(Objects.requireNonNull(digests, "digests"));
      return this;
    }

    public BlockHashInputs build() {
      return new BlockHashInputs(this);
    }
  }

  /**
   * Writes block {@code block}'s extra-keys item (tokens {@code [start, end)} of the request).
   * {@code cursor[0]} is the first multimodal item that may still overlap; blocks must come in
   * increasing order for one cursor.
   */
  void write(KeyWriter out, int block, long start, long end, int[] cursor) {
    int first = cursor[0];
    while (first < multimodal.size() && itemEnd(first) <= start) {
      first++;
    }
    cursor[0] = first;
    int mmCount = 0;
    for (int i = first; i < multimodal.size() && multimodal.get(i).offset() < end; i++) {
      if (itemEnd(i) > start) {
        mmCount++;
      }
    }
    boolean salt = saltUtf8 != null && start == 0;
    byte[] embeds = block < promptEmbedsDigests.size() ? promptEmbedsDigests.get(block) : null;
    boolean lora = loraUtf8 != null || loraId != null;
    int count = (lora ? 1 : 0) + mmCount + (salt ? 1 : 0) + (embeds != null ? 1 : 0);
    if (count == 0) {
      out.none();
      return;
    }
    out.beginTuple(count);
    if (loraUtf8 != null) {
      out.text(loraUtf8);
    } else if (loraId != null) {
      out.integer(loraId);
    }
    for (int i = first; i < multimodal.size() && multimodal.get(i).offset() < end; i++) {
      if (itemEnd(i) > start && multimodalOffsets) {
        out.beginTuple(2);
        out.text(multimodalUtf8[i]);
        out.integer(multimodal.get(i).offset() - start);
        out.endTuple(2);
      } else if (itemEnd(i) > start) {
        out.text(multimodalUtf8[i]);
      }
    }
    if (salt) {
      out.text(saltUtf8);
    }
    if (embeds != null) {
      out.bytes(embeds);
    }
    out.endTuple(count);
  }

  private long itemEnd(int i) {
    MultimodalItem item = multimodal.get(i);
    return item.offset() + item.length();
  }

  @Override
  public String toString() {
    return "BlockHashInputs[loraName="
        + loraName
        + ", loraId="
        + loraId
        + ", cacheSalt="
        + (cacheSalt == null ? null : "<" + cacheSalt.length() + " chars>")
        + ", multimodal="
        + multimodal
        + ", promptEmbedsDigests="
        + promptEmbedsDigests.size()
        + "]";
  }
}
