package io.kvindex.event;

import java.util.AbstractList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Objects;
import java.util.RandomAccess;

/**
 * An immutable list of block hashes (unsigned 64-bit values in a {@code long}) held in one {@code
 * long[]}: 8 bytes a hash, where a list of boxed {@link Long}s takes about 20. It is a {@code
 * List<Long>} (equal to any list of the same values); read it with {@link #getLong(int)} to avoid
 * boxing. Thread-safe (immutable).
 */
public final class BlockHashes extends AbstractList<Long> implements RandomAccess {
  private static final BlockHashes EMPTY = new BlockHashes(new long[0]);

  private final long[] hashes;

  private BlockHashes(long[] hashes) {
    this.hashes = hashes;
  }

  /** No hashes. */
  public static BlockHashes empty() {
    return EMPTY;
  }

  /** The hashes given, copied. */
  public static BlockHashes of(long... hashes) {
    return hashes.length == 0 ? EMPTY : new BlockHashes(hashes.clone());
  }

  /**
   * The hashes of {@code list}, in order: the list itself when it is a {@code BlockHashes}, else a
   * copy.
   *
   * @throws NullPointerException if the list or one of its elements is null
   */
  public static BlockHashes copyOf(Collection<Long> list) {
    if (list instanceof BlockHashes same) {
      return same;
    }
    long[] out = new long[list.size()];
    int i = 0;
    for (Long h : list) {
      out[i++] = Objects.requireNonNull(h, "a block hash");
    }
    return out.length == 0 ? EMPTY : new BlockHashes(out);
  }

  /** The hash at {@code index}, unboxed. */
  public long getLong(int index) {
    return hashes[index];
  }

  @Override
  public Long get(int index) {
    return hashes[index];
  }

  @Override
  public int size() {
    return hashes.length;
  }

  /** The hashes in {@code [from, to)}, as their own list (a copy of that range). */
  @Override
  public BlockHashes subList(int from, int to) {
    Objects.checkFromToIndex(from, to, hashes.length);
    return from == 0 && to == hashes.length
        ? this
        : new BlockHashes(Arrays.copyOfRange(hashes, from, to));
  }

  /** A copy of the hashes. */
  public long[] toLongArray() {
    return hashes.clone();
  }

  @Override
  public boolean equals(Object o) {
    if (o instanceof BlockHashes other) {
      return Arrays.equals(hashes, other.hashes);
    }
    return super.equals(o);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(hashes);
  }
}
