package io.kvindex.router;

import io.kvindex.common.Check;
import io.kvindex.index.CandidatePods;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * One prompt to score: either its token ids (the router computes the block keys with the model's
 * configured key mode) or block keys the caller computed. Immutable by convention: the arrays are
 * not copied (a gateway builds them once per request), so nobody may change them once given; then
 * thread-safe.
 *
 * @param model the served model name, as the pods report it
 * @param lora the LoRA adapter name, or {@code null} for the base model
 * @param cacheSalt vLLM's per-request {@code cache_salt}, or {@code null}; engine keys only
 * @param tokenIds the prompt's token ids, or {@code null} when {@code blockKeys} is given
 * @param blockKeys precomputed block keys (unsigned 64-bit), or {@code null} when {@code tokenIds}
 *     is given
 * @param candidatePods the pods the request may go to (duplicates dropped, {@link CandidatePods});
 *     an empty list gets an empty answer
 */
public record ScoreRequest(
    String model,
    String lora,
    String cacheSalt,
    int[] tokenIds,
    long[] blockKeys,
    List<String> candidatePods) {

  public ScoreRequest {
    Check.notBlank(model, "model");
    if ((tokenIds == null) == (blockKeys == null)) {
      throw new IllegalArgumentException("give exactly one of tokenIds and blockKeys");
    }
    CandidatePods checked = CandidatePods.of(Check.notNull(candidatePods, "pods"));
    if (checked.anyBlank()) {
      checked.forEach(pod -> Check.notBlank(pod, "candidate pod name"));
    }
    candidatePods = checked;
    if (lora != null && lora.isEmpty()) {
      lora = null;
    }
  }

  /** A prompt given as token ids, for the base model, without a cache salt. */
  public static ScoreRequest ofTokens(String model, int[] tokenIds, Collection<String> pods) {
    return new ScoreRequest(
        model, null, null, Check.notNull(tokenIds, "tokenIds"), null, listOf(pods));
  }

  /** A prompt given as precomputed block keys. */
  public static ScoreRequest ofBlockKeys(String model, long[] blockKeys, Collection<String> pods) {
    return new ScoreRequest(
        model, null, null, null, Check.notNull(blockKeys, "blockKeys"), listOf(pods));
  }

  /** This request for a LoRA adapter ({@code null} for the base model). */
  public ScoreRequest withLora(String lora) {
    return new ScoreRequest(model, lora, cacheSalt, tokenIds, blockKeys, candidatePods);
  }

  /** This request with vLLM's {@code cache_salt} ({@code null} for none). */
  public ScoreRequest withCacheSalt(String cacheSalt) {
    return new ScoreRequest(model, lora, cacheSalt, tokenIds, blockKeys, candidatePods);
  }

  /** The pods as a list, for the constructor to copy (once). */
  private static List<String> listOf(Collection<String> pods) {
    Check.notNull(pods, "pods");
    return pods instanceof List<String> list ? list : new ArrayList<>(pods);
  }
}
