package io.kvindex.ingester.stream;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class BackoffTest {
  @Test
  void backoff_growsJitteredUpToTheCap() {
    Backoff b = new Backoff(Duration.ofMillis(10), Duration.ofMillis(100));
    for (int i = 0; i < 20; i++) {
      Duration d = b.next();
      assertThat(d).isBetween(Duration.ofMillis(10), Duration.ofMillis(100));
    }
    b.reset();
    assertThat(b.next()).isBetween(Duration.ofMillis(10), Duration.ofMillis(10));
  }
}
