package io.kvindex.index;

import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;

/**
 * An immutable map of int keys in ascending order to int values, over two arrays: a hybrid lookup's
 * {@link PodMatch#groupTokens}, made for each candidate without boxing or copying. Thread-safe once
 * made (its arrays are never changed).
 */
final class GroupTokens extends AbstractMap<Integer, Integer> {
  private final int[] keys;
  private final int[] values;

  /**
   * @param keys strictly ascending; @param values one per key (both kept, never changed)
   */
  GroupTokens(int[] keys, int[] values) {
    if (keys.length != values.length) {
      throw new IllegalArgumentException("keys and values must have the same length");
    }
    for (int i = 1; i < keys.length; i++) {
      if (keys[i - 1] >= keys[i]) {
        throw new IllegalArgumentException("keys must be strictly ascending");
      }
    }
    this.keys = keys;
    this.values = values;
  }

  @Override
  public int size() {
    return keys.length;
  }

  private int indexOf(Object key) {
    if (key instanceof Integer k) {
      for (int i = 0; i < keys.length; i++) {
        if (keys[i] == k) {
          return i;
        }
      }
    }
    return -1;
  }

  @Override
  public boolean containsKey(Object key) {
    return indexOf(key) >= 0;
  }

  @Override
  public Integer get(Object key) {
    int i = indexOf(key);
    return i < 0 ? null : values[i];
  }

  @Override
  public Set<Entry<Integer, Integer>> entrySet() {
    return new AbstractSet<>() {
      @Override
      public int size() {
        return keys.length;
      }

      @Override
      public Iterator<Entry<Integer, Integer>> iterator() {
        return new Iterator<>() {
          private int next;

          @Override
          public boolean hasNext() {
            return next < keys.length;
          }

          @Override
          public Entry<Integer, Integer> next() {
            if (next >= keys.length) {
              throw new NoSuchElementException();
            }
            int i = next++;
            return Map.entry(keys[i], values[i]);
          }
        };
      }
    };
  }
}
