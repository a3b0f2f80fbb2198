package io.kvindex.hash;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HexFormat;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class CborWriterTest {

  private static String hex(Consumer<CborWriter> items) {
    return HexFormat.of().formatHex(CborWriter.encode(items));
  }

  @ParameterizedTest
  @CsvSource({
    "0, 00",
    "23, 17",
    "24, 1818",
    "255, 18ff",
    "256, 190100",
    "65535, 19ffff",
    "65536, 1a00010000",
    "4294967295, 1affffffff",
    "4294967296, 1b0000000100000000",
    "9223372036854775807, 1b7fffffffffffffff",
    "-1, 20",
    "-3, 22",
    "-24, 37",
    "-25, 3818",
    "-256, 38ff",
    "-257, 390100",
    "-65537, 3a00010000",
    "-9223372036854775808, 3b7fffffffffffffff"
  })
  void integer_edgeValues_shortestCanonicalForm(long value, String expected) {
    assertThat(hex(w -> w.integer(value))).isEqualTo(expected);
  }

  @ParameterizedTest
  @CsvSource({
    "18446744073709551615, 1bffffffffffffffff",
    "9223372036854775808, 1b8000000000000000",
    "24, 1818"
  })
  void unsigned_above63Bits_usesEightByteArgument(String value, String expected) {
    long bits = Long.parseUnsignedLong(value);
    assertThat(hex(w -> w.unsigned(bits))).isEqualTo(expected);
  }

  @ParameterizedTest
  @CsvSource({"0, 80", "3, 83", "16, 90", "23, 97", "24, 9818", "32, 9820", "256, 990100"})
  void arrayHeader_sizes_shortestForm(int items, String expected) {
    assertThat(hex(w -> w.arrayHeader(items))).isEqualTo(expected);
  }

  @ParameterizedTest
  @CsvSource({"42, 623432", "Alice, 65416c696365", "é, 62c3a9"})
  void text_utf8_lengthPrefixed(String text, String expected) {
    assertThat(hex(w -> w.text(text))).isEqualTo(expected);
  }

  @ParameterizedTest
  @CsvSource({"0, 40", "16, 50", "23, 57", "24, 5818", "32, 5820", "256, 590100"})
  void bytes_lengths_headerThenContent(int length, String expectedHeader) {
    byte[] content = new byte[length];
    assertThat(hex(w -> w.bytes(content)))
        .isEqualTo(expectedHeader + HexFormat.of().formatHex(content));
  }

  @Test
  void encode_emptyTextAndNull_singleBytes() {
    assertThat(hex(w -> w.text(""))).isEqualTo("60");
    assertThat(hex(CborWriter::nil)).isEqualTo("f6");
  }

  @Test
  void encode_longContent_growsBuffer() {
    byte[] content = new byte[5000];
    content[4999] = 7;
    byte[] encoded = CborWriter.encode(w -> w.bytes(content));
    assertThat(encoded).hasSize(5003);
    assertThat(encoded[5002]).isEqualTo((byte) 7);
  }

  @Test
  void unsignedInts_edgeValues_sameAsInteger() {
    int[] values = {0, 23, 24, 255, 256, 65535, 65536, Integer.MAX_VALUE};
    String expected =
        hex(
            w -> {
              for (int v : values) {
                w.integer(v);
              }
            });
    assertThat(hex(w -> assertThat(w.unsignedInts(values, 0, values.length)).isEqualTo(-1)))
        .isEqualTo(expected);
  }

  @Test
  void unsignedInts_negative_returnsItsIndexAndStopsThere() {
    int[] values = {1, 300, -5, 2};
    CborWriter writer = new CborWriter(1);
    assertThat(writer.unsignedInts(values, 0, 4)).isEqualTo(2);
    assertThat(HexFormat.of().formatHex(writer.toByteArray())).isEqualTo("0119012c");
  }
}
