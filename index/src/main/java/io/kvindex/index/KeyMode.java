package io.kvindex.index;

/** How a model's block keys are formed. Chosen per model; immutable and thread-safe. */
public enum KeyMode {
  /** The block key is vLLM's own block hash; the router reproduces it. Parents are ignored. */
  ENGINE,
  /**
   * The block key is kvindex's token-key chain over each block's token ids, rooted in the model and
   * LoRA name ({@code io.kvindex.hash.TokenKeys}); the engine hash is mapped per stream.
   */
  TOKEN
}
