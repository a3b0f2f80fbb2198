package io.kvindex.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

class CurveFitTest {
  private static final double[] X = {16, 64, 256, 1024, 4096};

  @Test
  void of_straightLine_linearWithItsSlope() {
    CurveFit fit = CurveFit.of(X, new double[] {116, 164, 356, 1124, 4196});
    assertThat(fit.shape()).isEqualTo("linear");
    assertThat(fit.slope()).isCloseTo(1.0, within(1e-9));
    assertThat(fit.intercept()).isCloseTo(100, within(1e-6));
    assertThat(fit.describe("p50", "µs", "block"))
        .startsWith("p50: linear, 100 µs + 1.0 µs per block");
  }

  @Test
  void of_growthByLogarithm_logarithmic() {
    double[] y = new double[X.length];
    for (int i = 0; i < X.length; i++) {
      y[i] = 50 + 20 * Math.log(X[i]);
    }
    CurveFit fit = CurveFit.of(X, y);
    assertThat(fit.shape()).isEqualTo("logarithmic");
    assertThat(fit.slope()).isCloseTo(20, within(1e-9));
  }

  @Test
  void of_withinAQuarter_flat() {
    CurveFit fit = CurveFit.of(X, new double[] {200, 210, 190, 205, 230});
    assertThat(fit.shape()).isEqualTo("flat");
    assertThat(fit.describe("p50", "µs", "block"))
        .contains("about 207 µs", "largest / smallest 1.21");
  }
}
