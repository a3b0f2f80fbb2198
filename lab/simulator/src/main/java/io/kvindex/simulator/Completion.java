package io.kvindex.simulator;

import java.util.Map;

/**
 * What serving one request did. Immutable and thread-safe.
 *
 * @param pod the pod that served it
 * @param rank the data-parallel rank that served it
 * @param promptTokens the prompt length
 * @param cachedTokens prompt tokens served from the prefix cache (GPU or CPU tier), as vLLM counts
 *     them: whole blocks, never the prompt's last token
 */
public record Completion(String pod, int rank, int promptTokens, int cachedTokens) {

  /**
   * The completion's {@code usage} as vLLM reports it with {@code --enable-prompt-tokens-details}:
   * {@code {"prompt_tokens": N, "prompt_tokens_details": {"cached_tokens": C}}}, the figure a
   * gateway sends back to the router ({@code POST /observe}).
   */
  public Map<String, Object> usage() {
    return Map.of(
        "prompt_tokens",
        promptTokens,
        "prompt_tokens_details",
        Map.of("cached_tokens", cachedTokens));
  }
}
