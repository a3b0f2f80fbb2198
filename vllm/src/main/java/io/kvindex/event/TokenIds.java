package io.kvindex.event;

import java.util.AbstractList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Objects;
import java.util.RandomAccess;

/**
 * An immutable list of token ids held in one {@code int[]}: 4 bytes a token, where a list of boxed
 * {@link Integer}s takes about 20. It is a {@code List<Integer>} (equal to any list of the same
 * values); read it with {@link #getInt(int)} to avoid boxing. Thread-safe (immutable).
 */
public final class TokenIds extends AbstractList<Integer> implements RandomAccess {
  private static final TokenIds EMPTY = new TokenIds(new int[0]);

  private final int[] ids;

  private TokenIds(int[] ids) {
    this.ids = ids;
  }

  /** No token ids. */
  public static TokenIds empty() {
    return EMPTY;
  }

  /** The ids given, copied. */
  public static TokenIds of(int... ids) {
    return ids.length == 0 ? EMPTY : new TokenIds(ids.clone());
  }

  /**
   * The ids of {@code list}, in order: the list itself when it is a {@code TokenIds}, else a copy.
   *
   * @throws NullPointerException if the list or one of its elements is null
   */
  public static TokenIds copyOf(Collection<Integer> list) {
    if (list instanceof TokenIds same) {
      return same;
    }
    int[] out = new int[list.size()];
    int i = 0;
    for (Integer id : list) {
      out[i++] = Objects.requireNonNull(id, "a token id");
    }
    return out.length == 0 ? EMPTY : new TokenIds(out);
  }

  /** The id at {@code index}, unboxed. */
  public int getInt(int index) {
    return ids[index];
  }

  @Override
  public Integer get(int index) {
    return ids[index];
  }

  @Override
  public int size() {
    return ids.length;
  }

  /** The ids in {@code [from, to)}, as their own list (a copy of that range). */
  @Override
  public TokenIds subList(int from, int to) {
    Objects.checkFromToIndex(from, to, ids.length);
    return from == 0 && to == ids.length ? this : new TokenIds(Arrays.copyOfRange(ids, from, to));
  }

  /** A copy of the ids. */
  public int[] toIntArray() {
    return ids.clone();
  }

  @Override
  public boolean equals(Object o) {
    if (o instanceof TokenIds other) {
      return Arrays.equals(ids, other.ids);
    }
    return super.equals(o);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(ids);
  }
}
