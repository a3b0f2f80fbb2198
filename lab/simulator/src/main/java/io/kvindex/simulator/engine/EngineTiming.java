package io.kvindex.simulator.engine;

/**
 * How a timed engine schedules and how long its steps take: vLLM's {@code max_num_seqs} and {@code
 * max_num_batched_tokens}, and a step cost model
 *
 * <pre>
 *   step seconds = fixed + prefill tokens computed x per prefill token
 *                        + sequences decoding x per decoding sequence
 * </pre>
 *
 * <p>The {@link #DEFAULT} is calibrated for Llama-3.1-8B-Instruct in BF16 on one NVIDIA H100 80GB
 * (SXM): the fixed part is one read of the 16 GB of weights at the H100's 3.35 TB/s (about 5 ms,
 * the small-batch decode step); a prefill token costs 2 x 8e9 FLOP at about 40 % of the 989
 * dense-BF16 TFLOPS (40 us, about 25 000 prefill tokens/s); a decoding sequence adds 50 us, so a
 * full decode batch of 256 takes 17.8 ms, or about 14 400 output tokens/s, near the ~12 500
 * tokens/s third-party benchmarks publish for vLLM serving that model on that GPU. Immutable.
 *
 * @param maxNumSeqs at most this many requests run at once; {@code >= 1}
 * @param maxNumBatchedTokens at most this many tokens computed per step (chunked prefill); {@code
 *     >= 1}
 * @param fixedSeconds the part of every step's time that does not depend on its batch
 * @param prefillTokenSeconds the time per prompt token computed (cache hits cost nothing)
 * @param decodeSequenceSeconds the time per running sequence generating a token
 */
public record EngineTiming(
    int maxNumSeqs,
    int maxNumBatchedTokens,
    double fixedSeconds,
    double prefillTokenSeconds,
    double decodeSequenceSeconds) {

  /** Llama-3.1-8B-Instruct, BF16, one H100 80GB; vLLM's defaults of 256 sequences, 8192 tokens. */
  public static final EngineTiming DEFAULT = new EngineTiming(256, 8192, 0.005, 40e-6, 50e-6);

  public EngineTiming {
    if (maxNumSeqs < 1) {
      throw new IllegalArgumentException("maxNumSeqs must be >= 1, got " + maxNumSeqs);
    }
    if (maxNumBatchedTokens < 1) {
      throw new IllegalArgumentException(
          "maxNumBatchedTokens must be >= 1, got " + maxNumBatchedTokens);
    }
    if (!(fixedSeconds >= 0) || !(prefillTokenSeconds >= 0) || !(decodeSequenceSeconds >= 0)) {
      throw new IllegalArgumentException(
          "step costs must be >= 0 seconds, got fixed "
              + fixedSeconds
              + ", per prefill token "
              + prefillTokenSeconds
              + ", per decoding sequence "
              + decodeSequenceSeconds);
    }
  }

  /** The cost model's time for a step computing {@code prefillTokens} and decoding {@code seqs}. */
  public double stepSeconds(int prefillTokens, int decodingSequences) {
    return fixedSeconds
        + prefillTokens * prefillTokenSeconds
        + decodingSequences * decodeSequenceSeconds;
  }

  /**
   * What one request costs the engine with no prefix hit, in seconds, in a full batch: its prompt's
   * prefill, and its share of {@code outputTokens} decode steps (the fixed part shared by {@code
   * maxNumSeqs} sequences). The basis of a fleet's capacity estimate.
   */
  public double requestSeconds(int promptTokens, int outputTokens) {
    return promptTokens * prefillTokenSeconds
        + outputTokens * (decodeSequenceSeconds + fixedSeconds / maxNumSeqs);
  }
}
