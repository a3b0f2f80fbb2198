package io.kvindex.index.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class SegmentCodecTest {
  /** A slot as apply.lua writes it: offset, key, value length (2 bytes), entries. */
  private static byte[] slot(int offset, long key, byte... entries) {
    return ByteBuffer.allocate(11 + entries.length)
        .put((byte) offset)
        .putLong(key)
        .putShort((short) entries.length)
        .put(entries)
        .array();
  }

  private static byte[] segment(byte[]... slots) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] s : slots) {
      out.writeBytes(s);
    }
    return out.toByteArray();
  }

  /** What {@link SegmentCodec#read} places for blocks start..end, copied out (null: absent). */
  private static List<byte[]> values(byte[] segment, long[] keys, int start, int end) {
    BlockValues out = new BlockValues(end - start);
    SegmentCodec.read(out, out.extend(end - start), segment, keys, start, end);
    List<byte[]> values = new ArrayList<>();
    for (int i = 0; i < out.size(); i++) {
      byte[] array = out.array(i);
      values.add(array == null ? null : Arrays.copyOfRange(array, out.from(i), out.to(i)));
    }
    return values;
  }

  /** A span's slot with the entries of the slot before it: offset, key, length 0xFFFF. */
  private static byte[] sameAsBefore(int offset, long key) {
    return ByteBuffer.allocate(11).put((byte) offset).putLong(key).putShort((short) -1).array();
  }

  @Test
  void values_sameAsBefore_takesTheEntriesOfTheSlotBeforeItMatchedOrNot() {
    long[] keys = {300, 301, 302, 303};
    byte[] span =
        segment(
            slot(0, 300, (byte) 0, (byte) 0x11),
            sameAsBefore(1, 301),
            slot(2, 999, (byte) 0, (byte) 0x21), // another chain's block: not read, but before
            sameAsBefore(2, 302),
            sameAsBefore(3, 303));
    List<byte[]> values = values(span, keys, 0, 4);
    assertThat(values.get(0)).containsExactly(0, 0x11);
    assertThat(values.get(1)).containsExactly(0, 0x11);
    assertThat(values.get(2)).containsExactly(0, 0x21);
    assertThat(values.get(3)).containsExactly(0, 0x21);
  }

  @Test
  void values_slotsInAnyOrderAndBranches_matchEachBlockByOffsetAndKey() {
    long[] keys = {100, 101, 102, 103, 104};
    byte[] seg =
        segment(
            slot(2, 102, (byte) 0, (byte) 0x11),
            slot(1, 999, (byte) 0, (byte) 0x21), // a branch: another chain's block at offset 1
            slot(0, 100, (byte) 0, (byte) 0x11, (byte) 0, (byte) 0x21),
            slot(1, 101, (byte) 0, (byte) 0x12),
            slot(4, 104));
    List<byte[]> values = values(seg, keys, 0, 5);
    assertThat(values.get(0)).containsExactly(0, 0x11, 0, 0x21);
    assertThat(values.get(1)).containsExactly(0, 0x12);
    assertThat(values.get(2)).containsExactly(0, 0x11);
    assertThat(values.get(3)).as("no slot for block 103").isNull();
    assertThat(values.get(4)).as("a slot with no entries").isEmpty();
  }

  @Test
  void values_laterSegmentOfALongPrompt_offsetsCountFromItsHead() {
    long[] keys = new long[20];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = 500 + i;
    }
    byte[] seg = segment(slot(0, 516, (byte) 0, (byte) 0x11), slot(3, 519, (byte) 0, (byte) 0x11));
    List<byte[]> values = values(seg, keys, 16, 20);
    assertThat(values).hasSize(4);
    assertThat(values.get(0)).isNotNull();
    assertThat(values.get(1)).isNull();
    assertThat(values.get(3)).isNotNull();
    assertThat(values(seg, keys, 16, 18)).as("slots past the prompt's end are ignored").hasSize(2);
  }

  @Test
  void values_absentSegment_allNull() {
    assertThat(values(null, new long[] {1, 2}, 0, 2)).containsExactly(null, null);
  }

  @Test
  void values_cutShort_saysWhatToDo() {
    byte[] whole = slot(0, 7, (byte) 0, (byte) 0x11);
    byte[] cut = Arrays.copyOf(whole, whole.length - 1);
    assertThatThrownBy(() -> values(cut, new long[] {7}, 0, 1))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("cut short")
        .hasMessageContaining("purge every pod");
    assertThatThrownBy(() -> values(new byte[5], new long[] {7}, 0, 1))
        .isInstanceOf(IllegalStateException.class);
  }
}
