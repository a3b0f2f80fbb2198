package io.kvindex.index;

import io.kvindex.common.Check;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * One routing question: how much of this prompt's block chain does each candidate pod hold?
 * Immutable and thread-safe by convention: {@code blockKeys} is not copied (a router computes it
 * once per request and hands it on), so nobody may change it after constructing the request.
 *
 * @param model the served model
 * @param keyMode how {@code blockKeys} were formed; must match the mode the model is indexed in
 * @param blockKeys the prompt's block keys in chain order (engine hashes or token keys): one chain,
 *     each key the child of the one before it (a Redis index reads them 16 to a segment field, by
 *     their offsets under the first key)
 * @param candidatePods the pods the router may choose from (at most {@value #MAX_CANDIDATES});
 *     duplicates are ignored ({@link CandidatePods})
 * @param cacheGroup the KV-cache group (0 for models with one group), 0 to 65535
 */
public record LookupRequest(
    String model, KeyMode keyMode, long[] blockKeys, Set<String> candidatePods, int cacheGroup) {

  /** The most candidate pods one request may name. */
  public static final int MAX_CANDIDATES = 4096;

  public LookupRequest {
    Check.name(model, "model");
    Check.notNull(keyMode, "keyMode");
    Check.notNull(blockKeys, "blockKeys");
    Check.notNull(candidatePods, "candidatePods");
    candidatePods = CandidatePods.of(candidatePods).asSet();
    Check.between(cacheGroup, 0, 0xFFFF, "cacheGroup");
  }

  /** A request for cache group 0. */
  public static LookupRequest of(
      String model, KeyMode keyMode, long[] blockKeys, Collection<String> pods) {
    return new LookupRequest(model, keyMode, blockKeys, CandidatePods.of(pods).asSet(), 0);
  }

  /** A request for cache group 0, its keys given as a list (copied into an array). */
  public static LookupRequest of(
      String model, KeyMode keyMode, List<Long> blockKeys, Collection<String> pods) {
    long[] keys =
        Check.notNull(blockKeys, "blockKeys").stream().mapToLong(Long::longValue).toArray();
    return of(model, keyMode, keys, pods);
  }

  /** How many blocks the prompt has. */
  public int length() {
    return blockKeys.length;
  }

  /** Equal when every component is, the block keys compared by content. */
  @Override
  public boolean equals(Object o) {
    return o instanceof LookupRequest r
        && model.equals(r.model)
        && keyMode == r.keyMode
        && Arrays.equals(blockKeys, r.blockKeys)
        && candidatePods.equals(r.candidatePods)
        && cacheGroup == r.cacheGroup;
  }

  @Override
  public int hashCode() {
    return Objects.hash(model, keyMode, Arrays.hashCode(blockKeys), candidatePods, cacheGroup);
  }

  @Override
  public String toString() {
    return "LookupRequest[model="
        + model
        + ", keyMode="
        + keyMode
        + ", blocks="
        + blockKeys.length
        + ", candidates="
        + candidatePods.size()
        + ", cacheGroup="
        + cacheGroup
        + "]";
  }
}
