package io.kvindex.index;

import io.kvindex.common.Check;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The answer to a {@link LookupRequest}. Immutable and thread-safe.
 *
 * @param pods every candidate pod whose index group answered, in request order ({@link
 *     PodMatch#none} for pods holding nothing, unknown, or no longer live)
 * @param complete false when Redis kept failing with temporary errors for some index group: its
 *     candidates are missing from {@code pods} (route them as "no information")
 */
public record LookupResult(Map<String, PodMatch> pods, boolean complete) {

  public LookupResult {
    if (!(Check.notNull(pods, "pods") instanceof PodMatches)) {
      pods = Collections.unmodifiableMap(new LinkedHashMap<>(pods));
    }
  }

  /**
   * A result over matches already in request order, without copying them.
   *
   * @param matches one per pod answered, no pod twice, no nulls; nobody may change the array after
   */
  public static LookupResult inOrder(PodMatch[] matches, boolean complete) {
    return new LookupResult(new PodMatches(matches), complete);
  }
}
