package io.kvindex.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

class DurationsTest {

  /** Every form any kvindex command took before there was one parser, and the new ones. */
  static Stream<Arguments> forms() {
    return Stream.of(
        Arguments.of("250ms", Duration.ofMillis(250)),
        Arguments.of("6s", Duration.ofSeconds(6)),
        Arguments.of("1.5s", Duration.ofMillis(1500)),
        Arguments.of("4500ms", Duration.ofMillis(4500)),
        Arguments.of("2m", Duration.ofMinutes(2)),
        Arguments.of("1h", Duration.ofHours(1)),
        Arguments.of("1d", Duration.ofDays(1)),
        Arguments.of("250us", Duration.ofNanos(250_000)),
        Arguments.of("250µs", Duration.ofNanos(250_000)),
        Arguments.of("100ns", Duration.ofNanos(100)),
        Arguments.of("40", Duration.ofSeconds(40)),
        Arguments.of("PT6S", Duration.ofSeconds(6)),
        Arguments.of("pt0.005s", Duration.ofMillis(5)),
        Arguments.of("P1D", Duration.ofDays(1)),
        Arguments.of(" 5 ms ", Duration.ofMillis(5)),
        Arguments.of("5MS", Duration.ofMillis(5)));
  }

  @ParameterizedTest
  @MethodSource("forms")
  void parse_everyForm(String text, Duration expected) {
    assertThat(Durations.parse(text)).isEqualTo(expected);
  }

  @ParameterizedTest
  @ValueSource(strings = {"soon", "", "5 parsecs", "-1s", "ms", "1.2.3s"})
  void parse_badFormsSayWhatIsAccepted(String text) {
    assertThatThrownBy(() -> Durations.parse(text))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("250ms, 6s");
  }

  @ParameterizedTest
  @MethodSource("forms")
  void format_readsBack(String text, Duration d) {
    assertThat(Durations.parse(Durations.format(d))).isEqualTo(d);
  }
}
