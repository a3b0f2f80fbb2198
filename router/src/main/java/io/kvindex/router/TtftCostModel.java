package io.kvindex.router;

import io.kvindex.common.Check;

/**
 * The estimated-TTFT pick policy's cost model: what a pod's engine spends before a new request's
 * first token, in the shape of vLLM's scheduling loop with chunked prefill. The prompt tokens to
 * compute (the tokens queued ahead plus this request's tokens past the pod's cached prefix) go in
 * steps of at most {@code batchTokens}, each step costing {@code stepSeconds}, each token {@code
 * tokenSeconds}. Immutable, so thread-safe.
 *
 * <p>The defaults are Llama-3.1-8B-Instruct in BF16 on one H100 80GB with vLLM's default {@code
 * max_num_batched_tokens} (the simulator's engines are calibrated to the same): 5 ms a step, 40 µs
 * a prompt token, 8 192 tokens a step. Only the ratios between candidates matter to a pick, so a
 * model or GPU of another speed changes picks only through the per-step part against the per-token
 * part.
 *
 * @param stepSeconds fixed seconds of one engine step; {@code >= 0}
 * @param tokenSeconds seconds per prompt token computed; {@code > 0}
 * @param batchTokens prompt tokens one step computes at most ({@code max_num_batched_tokens});
 *     {@code >= 1}
 * @param tokensPerLoad prompt tokens queued ahead per unit of {@link LoadSignal#load} when the load
 *     signal does not report {@linkplain LoadSignal#queuedTokens queued tokens}; {@code >= 0}. The
 *     default, 256, takes a unit of load for an in-flight request, most of which are decoding
 *     (nothing left to prefill) while a few wait with their uncached prompt (a tenth of a 2 500
 *     token one): a guess, which the gateway's own queued-token count replaces
 */
public record TtftCostModel(
    double stepSeconds, double tokenSeconds, int batchTokens, double tokensPerLoad) {

  /** The defaults: 5 ms a step, 40 µs a token, 8 192 tokens a step, 256 tokens per load unit. */
  public static final TtftCostModel DEFAULT = new TtftCostModel(0.005, 40e-6, 8192, 256);

  public TtftCostModel {
    Check.atLeast(stepSeconds, 0.0, "stepSeconds");
    if (!(tokenSeconds > 0) || Double.isInfinite(tokenSeconds)) {
      throw new IllegalArgumentException(
          "tokenSeconds must be a positive number of seconds per prompt token, got "
              + tokenSeconds);
    }
    Check.atLeast(batchTokens, 1, "batchTokens");
    Check.atLeast(tokensPerLoad, 0.0, "tokensPerLoad");
  }

  /**
   * Parses {@code STEP_S,TOKEN_S,BATCH_TOKENS,TOKENS_PER_LOAD}, as {@link #toString()} writes it.
   *
   * @throws IllegalArgumentException naming the part that is wrong
   */
  public static TtftCostModel parse(String text) {
    String[] parts = text.split(",", -1);
    if (parts.length != 4) {
      throw new IllegalArgumentException(
          "a TTFT cost model is STEP_S,TOKEN_S,BATCH_TOKENS,TOKENS_PER_LOAD (default "
              + DEFAULT
              + "), got '"
              + text
              + "'");
    }
    try {
      return new TtftCostModel(
          Double.parseDouble(parts[0].strip()),
          Double.parseDouble(parts[1].strip()),
          Integer.parseInt(parts[2].strip()),
          Double.parseDouble(parts[3].strip()));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "a TTFT cost model is four numbers STEP_S,TOKEN_S,BATCH_TOKENS,TOKENS_PER_LOAD (default "
              + DEFAULT
              + "), got '"
              + text
              + "'",
          e);
    }
  }

  /** {@code STEP_S,TOKEN_S,BATCH_TOKENS,TOKENS_PER_LOAD}, what {@link #parse} reads. */
  @Override
  public String toString() {
    return num(stepSeconds)
        + ","
        + num(tokenSeconds)
        + ","
        + batchTokens
        + ","
        + num(tokensPerLoad);
  }

  private static String num(double v) {
    return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : Double.toString(v);
  }

  /**
   * Seconds until the first token of a request that leaves {@code uncachedTokens} to compute on a
   * pod with {@code queuedTokens} prompt tokens ahead of it.
   */
  public double seconds(double queuedTokens, double uncachedTokens) {
    double tokens = Math.max(0, queuedTokens) + Math.max(0, uncachedTokens);
    double steps = Math.max(1, Math.ceil(tokens / batchTokens));
    return steps * stepSeconds + tokens * tokenSeconds;
  }
}
