package io.kvindex.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class RetryPolicyTest {

  @Test
  void defaults_documentedValues() {
    RetryPolicy policy = RetryPolicy.defaults();

    assertThat(policy.maxAttempts()).isEqualTo(5);
    assertThat(policy.initialBackoff()).isEqualTo(Duration.ofMillis(20));
    assertThat(policy.backoffMultiplier()).isEqualTo(2.0);
    assertThat(policy.randomization()).isEqualTo(0.5);
    assertThat(policy.maxBackoff()).isEqualTo(Duration.ofSeconds(1));
    assertThat(policy.totalBudget()).isEqualTo(Duration.ofSeconds(10));
  }

  @Test
  void router_fitsInFiveMillis() {
    RetryPolicy policy = RetryPolicy.router();

    assertThat(policy.maxAttempts()).isEqualTo(3);
    assertThat(policy.totalBudget()).isEqualTo(Duration.ofMillis(5));
  }

  @Test
  void toBuilder_keepsSettings() {
    RetryPolicy policy = RetryPolicy.router().toBuilder().maxAttempts(4).build();

    assertThat(policy.maxAttempts()).isEqualTo(4);
    assertThat(policy.totalBudget()).isEqualTo(Duration.ofMillis(5));
  }

  @Test
  void builder_rejectsBadArguments() {
    assertThatThrownBy(() -> RetryPolicy.builder().maxAttempts(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxAttempts");
    assertThatThrownBy(() -> RetryPolicy.builder().initialBackoff(Duration.ofNanos(10)))
        .hasMessageContaining("initialBackoff");
    assertThatThrownBy(() -> RetryPolicy.builder().randomization(1.5))
        .hasMessageContaining("randomization");
    assertThatThrownBy(() -> RetryPolicy.builder().totalBudget(Duration.ZERO))
        .hasMessageContaining("totalBudget");
    assertThatThrownBy(() -> RetryPolicy.builder().totalBudget(null))
        .hasMessageContaining("totalBudget");
    assertThatThrownBy(
            () ->
                RetryPolicy.builder()
                    .initialBackoff(Duration.ofSeconds(2))
                    .maxBackoff(Duration.ofSeconds(1))
                    .build())
        .hasMessageContaining("maxBackoff");
  }
}
