package io.kvindex.simulator;

import java.util.Arrays;
import java.util.Objects;

/**
 * One request as the engine sees it after tokenisation: the prompt tokens, the tokens it will
 * generate, and the extra keys that enter vLLM's block hashes. Immutable and thread-safe (the
 * arrays are copied in and out).
 *
 * @param promptTokens the prompt token ids, at least one
 * @param outputTokens the generated token ids, at least one (vLLM always generates a token)
 * @param loraName the LoRA adapter name, or {@code null}
 * @param cacheSalt the request's {@code cache_salt}, or {@code null}
 */
public record InferenceRequest(
    int[] promptTokens, int[] outputTokens, String loraName, String cacheSalt) {

  public InferenceRequest {
    Objects.requireNonNull(promptTokens, "promptTokens");
    Objects.requireNonNull(outputTokens, "outputTokens");
    if (promptTokens.length == 0) {
      throw new IllegalArgumentException("promptTokens must hold at least one token");
    }
    if (outputTokens.length == 0) {
      throw new IllegalArgumentException(
          "outputTokens must hold at least one token (vLLM generates at least one)");
    }
    promptTokens = promptTokens.clone();
    outputTokens = outputTokens.clone();
  }

  /** A request without LoRA or cache salt. */
  public static InferenceRequest of(int[] promptTokens, int[] outputTokens) {
    return new InferenceRequest(promptTokens, outputTokens, null, null);
  }

  @Override
  public int[] promptTokens() {
    return promptTokens.clone();
  }

  @Override
  public int[] outputTokens() {
    return outputTokens.clone();
  }

  public int promptLength() {
    return promptTokens.length;
  }

  public int outputLength() {
    return outputTokens.length;
  }

  /** Prompt followed by output, the sequence whose blocks the engine caches. */
  public int[] allTokens() {
    int[] all = Arrays.copyOf(promptTokens, promptTokens.length + outputTokens.length);
    System.arraycopy(outputTokens, 0, all, promptTokens.length, outputTokens.length);
    return all;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof InferenceRequest r
        && Arrays.equals(promptTokens, r.promptTokens)
        && Arrays.equals(outputTokens, r.outputTokens)
        && Objects.equals(loraName, r.loraName)
        && Objects.equals(cacheSalt, r.cacheSalt);
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        Arrays.hashCode(promptTokens), Arrays.hashCode(outputTokens), loraName, cacheSalt);
  }

  @Override
  public String toString() {
    return "InferenceRequest[prompt="
        + promptTokens.length
        + " tokens, output="
        + outputTokens.length
        + " tokens, loraName="
        + loraName
        + ", cacheSalt="
        + cacheSalt
        + "]";
  }
}
