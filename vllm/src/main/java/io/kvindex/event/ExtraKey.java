package io.kvindex.event;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;

/**
 * One element of a block's extra hash keys, in vLLM's order: LoRA name and cache salt are {@link
 * Text}, multimodal items are {@link Multimodal}, prompt-embeds digests are {@link Digest}.
 */
public sealed interface ExtraKey permits ExtraKey.Text, ExtraKey.Multimodal, ExtraKey.Digest {

  /** A string key (LoRA name, cache salt, or a pre-v0.18 multimodal identifier). */
  record Text(String value) implements ExtraKey {
    public Text {
      Objects.requireNonNull(value, "value");
    }
  }

  /** A multimodal item overlapping the block: its identifier and its start offset in the block. */
  record Multimodal(String identifier, long offset) implements ExtraKey {
    public Multimodal {
      Objects.requireNonNull(identifier, "identifier");
    }
  }

  /** A raw byte-string key (the SHA-256 digest of a block's prompt embeddings). */
  record Digest(byte[] bytes) implements ExtraKey {
    public Digest {
      bytes = Objects.requireNonNull(bytes, "bytes").clone();
    }

    @Override
    public byte[] bytes() {
      return bytes.clone();
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Digest d && Arrays.equals(bytes, d.bytes);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(bytes);
    }

    @Override
    public String toString() {
      return "Digest[" + HexFormat.of().formatHex(bytes) + "]";
    }
  }
}
