package io.kvindex.index.redis;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class BlockValuesTest {
  @Test
  void addField_locatedValue_skipsItsLocator() {
    byte[] located = located(0, 0x11); // a locator, one entry (2)
    BlockValues values = new BlockValues(2);
    values.addField(located);
    values.addField(null);
    assertThat(values.size()).isEqualTo(2);
    assertThat(values.from(0)).isEqualTo(BlockValue.LOCATOR_BYTES);
    assertThat(values.to(0)).isEqualTo(located.length);
    assertThat(values.array(1)).as("an absent block").isNull();
  }

  @Test
  void sameEntries_comparesTheRangesNotTheArrays() {
    byte[] segment = {9, 0, 0x11, 9, 9, 0, 0x11, 0, 0x21};
    byte[] field = {0, 0x11};
    BlockValues values = new BlockValues(4);
    int first = values.extend(3);
    int id = values.source(segment);
    values.set(first, id, 1, 3);
    values.set(first + 1, id, 5, 7);
    values.set(first + 2, id, 5, 9);
    values.addField(field);
    assertThat(values.sameEntries(0, 1)).as("equal bytes at other offsets").isTrue();
    assertThat(values.sameEntries(0, 3)).as("equal bytes in another array").isTrue();
    assertThat(values.sameEntries(1, 2)).as("one range longer").isFalse();
  }

  @ParameterizedTest
  @ValueSource(ints = {2, 8, 14, 16, 22, 64})
  void sameEntries_longRanges_anyByteDifferingTells(int length) {
    byte[] a = new byte[3 + length];
    byte[] b = new byte[5 + length];
    for (int k = 0; k < length; k++) {
      a[3 + k] = (byte) (k * 7 + 1);
      b[5 + k] = (byte) (k * 7 + 1);
    }
    BlockValues same = new BlockValues(2);
    int first = same.extend(2);
    same.set(first, same.source(a), 3, 3 + length);
    same.set(first + 1, same.source(b), 5, 5 + length);
    assertThat(same.sameEntries(0, 1)).isTrue();
    for (int k = 0; k < length; k++) {
      byte[] changed = b.clone();
      changed[5 + k] ^= 0x40;
      BlockValues values = new BlockValues(2);
      values.set(values.extend(2), values.source(a), 3, 3 + length);
      values.set(1, values.source(changed), 5, 5 + length);
      assertThat(values.sameEntries(0, 1)).as("byte %d differs", k).isFalse();
    }
  }

  @Test
  void sameEntries_absentAndEmpty_bothHoldNothing() {
    BlockValues values = new BlockValues(3);
    values.addField(null);
    values.addField(located()); // located, no entries
    values.addField(new byte[] {0, 0x11});
    assertThat(values.sameEntries(0, 1)).isTrue();
    assertThat(values.sameEntries(0, 2)).isFalse();
    assertThat(values.sameEntries(2, 0)).isFalse();
  }

  /** A located block value: a locator (head key 1..8, position 0), then these bytes. */
  private static byte[] located(int... entries) {
    byte[] value = new byte[BlockValue.LOCATOR_BYTES + entries.length];
    for (int b = 0; b < 8; b++) {
      value[b] = (byte) (b + 1);
    }
    for (int e = 0; e < entries.length; e++) {
      value[BlockValue.LOCATOR_BYTES + e] = (byte) entries[e];
    }
    return value;
  }
}
