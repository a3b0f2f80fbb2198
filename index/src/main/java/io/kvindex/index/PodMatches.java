package io.kvindex.index;

import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;

/**
 * Matches in request order as an unmodifiable map from pod to match, over the array a lookup
 * filled: {@link LookupResult} keeps it as it is, where it would copy any other map. Lookups of one
 * pod go through a hash map made on first use. Immutable and thread-safe.
 */
final class PodMatches extends AbstractMap<String, PodMatch> {
  /** Maps up to this size are searched in order rather than hashed. */
  private static final int SCANNED = 8;

  private final PodMatch[] matches;
  private volatile Map<String, PodMatch> byPod;

  /**
   * @param matches no nulls, no pod twice; never changed afterwards
   */
  PodMatches(PodMatch[] matches) {
    this.matches = matches;
  }

  @Override
  public int size() {
    return matches.length;
  }

  @Override
  public PodMatch get(Object pod) {
    if (matches.length <= SCANNED) {
      for (PodMatch match : matches) {
        if (match.pod().equals(pod)) {
          return match;
        }
      }
      return null;
    }
    Map<String, PodMatch> index = byPod;
    if (index == null) {
      index = new HashMap<>(matches.length * 4 / 3 + 1);
      for (PodMatch match : matches) {
        index.put(match.pod(), match);
      }
      byPod = index;
    }
    return index.get(pod);
  }

  @Override
  public boolean containsKey(Object pod) {
    return get(pod) != null;
  }

  @Override
  public Collection<PodMatch> values() {
    return Collections.unmodifiableList(Arrays.asList(matches));
  }

  @Override
  public Set<Entry<String, PodMatch>> entrySet() {
    return new AbstractSet<>() {
      @Override
      public Iterator<Entry<String, PodMatch>> iterator() {
        Iterator<PodMatch> each = values().iterator();
        return new Iterator<>() {
          @Override
          public boolean hasNext() {
            return each.hasNext();
          }

          @Override
          public Entry<String, PodMatch> next() {
            PodMatch match = each.next();
            return new SimpleImmutableEntry<>(match.pod(), match);
          }
        };
      }

      @Override
      public int size() {
        return matches.length;
      }
    };
  }
}
