package io.kvindex.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ByteSizesTest {

  @Test
  void parse_everyUnit() {
    assertThat(ByteSizes.parse("65536")).isEqualTo(65_536);
    assertThat(ByteSizes.parse("12 B")).isEqualTo(12);
    assertThat(ByteSizes.parse("512KiB")).isEqualTo(512 * 1024);
    assertThat(ByteSizes.parse("64mib")).isEqualTo(64L << 20);
    assertThat(ByteSizes.parse("1GiB")).isEqualTo(1L << 30);
    assertThat(ByteSizes.parse("3MB")).isEqualTo(3_000_000);
    assertThat(ByteSizes.parse("2 kb")).isEqualTo(2_000);
    assertThat(ByteSizes.parse("1gb")).isEqualTo(1_000_000_000);
  }

  @Test
  void parse_badForms_sayWhatToWrite() {
    for (String bad : new String[] {"", "MiB", "-1", "1.5MiB", "10 parsecs", "99999999999GiB"}) {
      assertThatThrownBy(() -> ByteSizes.parse(bad))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("64MiB");
    }
  }
}
