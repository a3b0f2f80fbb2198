package io.kvindex.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class SwitchesTest {
  @ParameterizedTest
  @ValueSource(strings = {"true", "TRUE", " on ", "yes", "1"})
  void parse_on(String text) {
    assertThat(Switches.parse(text)).isTrue();
  }

  @ParameterizedTest
  @ValueSource(strings = {"false", "Off", "no", "0"})
  void parse_off(String text) {
    assertThat(Switches.parse(text)).isFalse();
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "maybe", "2", "enabled"})
  void parse_other_saysWhatIsAccepted(String text) {
    assertThatThrownBy(() -> Switches.parse(text))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("write true or false");
  }
}
