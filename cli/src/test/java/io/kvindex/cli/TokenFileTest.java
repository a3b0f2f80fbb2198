package io.kvindex.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class TokenFileTest {

  private static int[] parse(String text) {
    return TokenFile.parse("t.txt", text.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void parse_commasAndWhiteSpace_allSeparate() {
    assertThat(parse("1,2 3\n4,\t5\r\n6 , 7,,8\n")).containsExactly(1, 2, 3, 4, 5, 6, 7, 8);
  }

  @Test
  void parse_emptyOrOnlySeparators_noTokens() {
    assertThat(parse("")).isEmpty();
    assertThat(parse(" ,\n ")).isEmpty();
  }

  @Test
  void parse_manyTokens_growsBeyondInitialCapacity() {
    StringBuilder text = new StringBuilder();
    for (int i = 0; i < 5000; i++) {
      text.append(i).append(',');
    }
    int[] tokens = parse(text.toString());
    assertThat(tokens).hasSize(5000);
    assertThat(tokens[4999]).isEqualTo(4999);
  }

  @Test
  void parse_extremes_accepted() {
    assertThat(parse("0 2147483647")).containsExactly(0, Integer.MAX_VALUE);
  }

  @Test
  void parse_nonNumeric_namesLineAndToken() {
    assertThatThrownBy(() -> parse("1, 2\n3, abc, 5"))
        .isInstanceOf(InputException.class)
        .hasMessage(
            "t.txt line 2: token #4 'abc' is not a token id; expected non-negative integers"
                + " separated by commas or white space");
  }

  @Test
  void parse_negative_saysNegative() {
    assertThatThrownBy(() -> parse("1 -5"))
        .isInstanceOf(InputException.class)
        .hasMessageContaining("token #2 '-5' is negative");
  }

  @Test
  void parse_tooLarge_saysTooLarge() {
    assertThatThrownBy(() -> parse("2147483648"))
        .isInstanceOf(InputException.class)
        .hasMessageContaining("is too large");
    assertThatThrownBy(() -> parse("99999999999999999999999"))
        .isInstanceOf(InputException.class)
        .hasMessageContaining("is too large");
  }

  @Test
  void parse_jsonBrackets_rejectedClearly() {
    assertThatThrownBy(() -> parse("[1, 2]"))
        .isInstanceOf(InputException.class)
        .hasMessageContaining("'[1'");
  }
}
