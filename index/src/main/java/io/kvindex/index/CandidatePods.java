package io.kvindex.index;

import io.kvindex.common.Check;
import java.util.AbstractList;
import java.util.AbstractSet;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.RandomAccess;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A request's candidate pods, checked: in the order given, without duplicates, each a valid name
 * ({@link Check#name}), at most {@value LookupRequest#MAX_CANDIDATES}. Immutable and thread-safe.
 *
 * <p>A gateway names the same few candidate lists over and over (the pods serving a model), so the
 * lists checked lately are kept, by content: {@link #of} for a list equal to one of them returns
 * the same instance, after comparing the list with it, and nothing is checked or copied again.
 * Whatever reads a request may then keep what it worked out for a candidate list (its pods' keys,
 * grouped by index group) by identity. The lists kept start afresh past {@value #KEPT_PODS} pods.
 */
public final class CandidatePods extends AbstractList<String> implements RandomAccess {
  /** Pods, summed over the lists kept, past which the lists kept start afresh. */
  static final int KEPT_PODS = 1 << 16;

  private static final Map<List<String>, CandidatePods> recent = new ConcurrentHashMap<>();
  private static final AtomicInteger recentPods = new AtomicInteger();

  private final String[] pods;
  private final boolean anyBlank;
  private final int hash;

  /** The pods as a set, for requests that keep them so; made on first use. */
  private volatile Set<String> set;

  private CandidatePods(String[] pods) {
    this.pods = pods;
    boolean blank = false;
    for (String pod : pods) {
      blank |= pod.isBlank();
    }
    this.anyBlank = blank;
    this.hash = Arrays.asList(pods).hashCode();
  }

  /**
   * The checked candidates of {@code given}, iterated in its order.
   *
   * @throws IllegalArgumentException for a null, empty or over-long name, or too many pods
   */
  public static CandidatePods of(Collection<String> given) {
    Check.notNull(given, "candidatePods");
    if (given instanceof CandidatePods checked) {
      return checked;
    }
    if (given instanceof PodSet view) {
      return view.owner();
    }
    List<String> list = given instanceof List<String> l ? l : new ArrayList<>(given);
    CandidatePods kept = recent.get(list);
    if (kept != null) {
      return kept;
    }
    Set<String> unique = new LinkedHashSet<>(list.size() * 4 / 3 + 1);
    for (String pod : list) {
      unique.add(Check.name(pod, "candidate pod"));
    }
    if (unique.size() > LookupRequest.MAX_CANDIDATES) {
      throw new IllegalArgumentException(
          "candidatePods must name at most "
              + LookupRequest.MAX_CANDIDATES
              + " pods, got "
              + unique.size()
              + "; split the request");
    }
    CandidatePods made = new CandidatePods(unique.toArray(String[]::new));
    keep(unique.size() == list.size() ? made : List.copyOf(list), made);
    return made;
  }

  private static void keep(List<String> given, CandidatePods made) {
    if (recentPods.addAndGet(given.size()) > KEPT_PODS) {
      recent.clear();
      recentPods.set(given.size());
    }
    recent.put(given, made);
  }

  /** Whether some pod's name is blank (only white space): routers refuse those. */
  public boolean anyBlank() {
    return anyBlank;
  }

  /** The same pods as an unmodifiable set, in the same order. */
  public Set<String> asSet() {
    Set<String> s = set;
    if (s == null) {
      s = new PodSet(this);
      set = s;
    }
    return s;
  }

  @Override
  public String get(int index) {
    return pods[index];
  }

  /** In order; unmodifiable, as every view of the list is. */
  @Override
  public Iterator<String> iterator() {
    return new Iterator<>() {
      private int next;

      @Override
      public boolean hasNext() {
        return next < pods.length;
      }

      @Override
      public String next() {
        if (next >= pods.length) {
          throw new NoSuchElementException();
        }
        return pods[next++];
      }
    };
  }

  @Override
  public int size() {
    return pods.length;
  }

  @Override
  public int hashCode() {
    return hash;
  }

  @Override
  public boolean equals(Object o) {
    if (o == this) {
      return true;
    }
    if (o instanceof CandidatePods other) {
      return hash == other.hash && Arrays.equals(pods, other.pods);
    }
    return super.equals(o);
  }

  /** {@link #asSet}: membership through a hash set made on first use. */
  private static final class PodSet extends AbstractSet<String> {
    private final CandidatePods owner;
    private volatile Set<String> members;

    PodSet(CandidatePods owner) {
      this.owner = owner;
    }

    CandidatePods owner() {
      return owner;
    }

    @Override
    public Iterator<String> iterator() {
      return owner.iterator();
    }

    @Override
    public int size() {
      return owner.size();
    }

    @Override
    public boolean contains(Object o) {
      Set<String> m = members;
      if (m == null) {
        m = new HashSet<>(owner);
        members = m;
      }
      return m.contains(o);
    }
  }
}
