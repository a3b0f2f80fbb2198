package io.kvindex.hash;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Opcode by opcode, against what {@code pickle.dumps(value, protocol=5)} printed in CPython 3.11.
 */
class PickleWriterTest {

  private static String hex(Consumer<PickleWriter> items) {
    return HexFormat.of().formatHex(PickleWriter.encode(items));
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void text_defaultSeed_framedShortUnicode() {
    // pickle.dumps("vllm-none-hash", protocol=5)
    assertThat(hex(w -> w.text(utf8("vllm-none-hash"))))
        .isEqualTo("80059512000000000000008c0e766c6c6d2d6e6f6e652d68617368942e");
  }

  @ParameterizedTest
  @CsvSource({
    // value, pickle.dumps(value, protocol=5): a pickle under 4 bytes has no frame
    "0, 80054b002e",
    "255, 80054bff2e",
    "256, 80059504000000000000004d00012e",
    "65535, 80059504000000000000004dffff2e",
    "65536, 80059506000000000000004a000001002e",
    "-1, 80059506000000000000004affffffff2e",
    "2147483647, 80059506000000000000004affffff7f2e",
    "2147483648, 80059508000000000000008a0500000080002e",
    "-2147483649, 80059508000000000000008a05ffffff7fff2e",
  })
  void integer_everyWidth(long value, String expected) {
    assertThat(hex(w -> w.integer(value))).isEqualTo(expected);
  }

  @Test
  void tuples_emptySmallAndLarge() {
    // pickle.dumps(((), (1,), (1, 2, 3), (1, 2, 3, 4)), protocol=5)
    int[] items = {1, 2, 3, 4};
    assertThat(
            hex(
                w -> {
                  w.beginTuple(4);
                  for (int n : new int[] {0, 1, 3, 4}) {
                    w.beginTuple(n);
                    w.tokenIds(items, 0, n);
                    w.endTuple(n);
                  }
                  w.endTuple(4);
                }))
        .isEqualTo(
            "8005951c0000000000000028294b0185944b014b024b038794284b014b024b034b04749474942e");
  }

  @Test
  void text_sharedOneCharacterStr_writtenOnceThenFetchedFromMemo() {
    // pickle.dumps(("a", "a", "ab", "ab"), protocol=5): "a" is one object, "ab" two
    assertThat(
            hex(
                w -> {
                  w.beginTuple(4);
                  w.text(utf8("a"));
                  w.text(utf8("a"));
                  w.text(utf8("ab"));
                  w.text(utf8("ab"));
                  w.endTuple(4);
                }))
        .isEqualTo("8005951400000000000000288c01619468008c026162948c0261629474942e");
  }

  @Test
  void none_andBytes() {
    // pickle.dumps((None, b"\x01\x02"), protocol=5)
    assertThat(
            hex(
                w -> {
                  w.beginTuple(2);
                  w.none();
                  w.bytes(new byte[] {1, 2});
                  w.endTuple(2);
                }))
        .isEqualTo("80059509000000000000004e430201029486942e");
  }
}
