package io.kvindex.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Optional;
import org.junit.jupiter.api.Test;

class BenchOptionsTest {

  @Test
  void toString_neverShowsPassword() {
    BenchOptions options = new BenchOptions(true, Optional.of("redis://kv:Pa55/w0rd@h:1"));

    assertThat(options.toString()).contains("redis://kv:***@h:1").doesNotContain("Pa55", "w0rd");
  }
}
