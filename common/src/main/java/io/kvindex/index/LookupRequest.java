package io.kvindex.index;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * One routing question: how much of this prompt's block chain does each candidate pod hold?
 * Immutable and thread-safe.
 *
 * @param model the served model
 * @param keyMode how {@code blockKeys} were formed; must match the mode the model is indexed in
 * @param blockKeys the prompt's block keys in chain order (engine hashes or token keys): one chain,
 *     each key the child of the one before it (a Redis index reads them 16 to a segment field, by
 *     their offsets under the first key)
 * @param candidatePods the pods the router may choose from (at most {@value #MAX_CANDIDATES});
 *     duplicates are ignored
 * @param cacheGroup the KV-cache group (0 for models with one group), 0 to 65535
 */
public record LookupRequest(
    String model,
    KeyMode keyMode,
    List<Long> blockKeys,
    Set<String> candidatePods,
    int cacheGroup) {

  /** The most candidate pods one request may name. */
  public static final int MAX_CANDIDATES = 4096;

  public LookupRequest {
    Names.check(model, "model");
    Names.notNull(keyMode, "keyMode");
    blockKeys = List.copyOf(Names.notNull(blockKeys, "blockKeys"));
    Names.notNull(candidatePods, "candidatePods");
    List<String> pods = new ArrayList<>(candidatePods.size());
    for (String pod : candidatePods) {
      pods.add(Names.check(pod, "candidate pod"));
    }
    candidatePods = java.util.Collections.unmodifiableSet(new LinkedHashSet<>(pods));
    if (candidatePods.size() > MAX_CANDIDATES) {
      throw new IllegalArgumentException(
          "candidatePods must name at most "
              + MAX_CANDIDATES
              + " pods, got "
              + candidatePods.size()
              + "; split the request");
    }
    if (cacheGroup < 0 || cacheGroup > 0xFFFF) {
      throw new IllegalArgumentException("cacheGroup must be in [0, 65535], got " + cacheGroup);
    }
  }

  /** A request for cache group 0. */
  public static LookupRequest of(
      String model, KeyMode keyMode, List<Long> blockKeys, java.util.Collection<String> pods) {
    return new LookupRequest(model, keyMode, blockKeys, new LinkedHashSet<>(pods), 0);
  }
}
