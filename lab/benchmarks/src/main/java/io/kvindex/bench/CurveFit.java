package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.common.Check;
import java.util.Locale;

/**
 * How a measured cost grows with its axis: least-squares fits of {@code y = a + b·x} (linear) and
 * {@code y = a + b·ln x} (logarithmic), the better of the two by R², unless the curve stays within
 * {@link #FLAT_SPREAD} of its smallest value over the whole range or neither model reaches an R² of
 * {@link #NOISE_R2} (flat); plus the power-law exponent {@code k} of {@code y ∝ x^k} from a fit of
 * the logarithms, as a second view. Immutable.
 *
 * @param shape {@code flat}, {@code logarithmic} or {@code linear}
 * @param intercept {@code a} of the chosen model (the mean for flat)
 * @param slope {@code b} of the chosen model (0 for flat)
 * @param r2 the chosen model's coefficient of determination (for flat: largest over smallest)
 * @param exponent {@code k} of the power-law fit
 */
record CurveFit(String shape, double intercept, double slope, double r2, double exponent) {
  /** Largest over smallest value up to which a curve counts as flat. */
  static final double FLAT_SPREAD = 1.25;

  /** Below this R² neither model explains the points: the curve is noise around a level. */
  static final double NOISE_R2 = 0.5;

  /** Noise, as long as the curve stays within this factor of its smallest value. */
  static final double NOISE_SPREAD = 2.0;

  static CurveFit of(double[] x, double[] y) {
    Check.atLeast(x.length, 2, "points");
    if (x.length != y.length) {
      throw new IllegalArgumentException("x and y must have the same length");
    }
    double[] lnX = new double[x.length];
    double[] lnY = new double[x.length];
    double min = Double.MAX_VALUE;
    double max = -Double.MAX_VALUE;
    for (int i = 0; i < x.length; i++) {
      lnX[i] = Math.log(x[i]);
      lnY[i] = Math.log(Math.max(y[i], 1e-12));
      min = Math.min(min, y[i]);
      max = Math.max(max, y[i]);
    }
    double exponent = line(lnX, lnY)[1];
    if (min > 0 && max / min <= FLAT_SPREAD) {
      return new CurveFit("flat", mean(y), 0, max / min, exponent);
    }
    double[] linear = line(x, y);
    double[] log = line(lnX, y);
    if (Math.max(linear[2], log[2]) < NOISE_R2 && max / min <= NOISE_SPREAD) {
      return new CurveFit("flat", mean(y), 0, max / min, exponent);
    }
    return linear[2] >= log[2]
        ? new CurveFit("linear", linear[0], linear[1], linear[2], exponent)
        : new CurveFit("logarithmic", log[0], log[1], log[2], exponent);
  }

  /** Intercept, slope and R² of the least-squares line through the points. */
  private static double[] line(double[] x, double[] y) {
    double mx = mean(x);
    double my = mean(y);
    double sxx = 0;
    double sxy = 0;
    double syy = 0;
    for (int i = 0; i < x.length; i++) {
      sxx += (x[i] - mx) * (x[i] - mx);
      sxy += (x[i] - mx) * (y[i] - my);
      syy += (y[i] - my) * (y[i] - my);
    }
    double slope = sxx == 0 ? 0 : sxy / sxx;
    double r2 = syy == 0 || sxx == 0 ? 1 : (sxy * sxy) / (sxx * syy);
    return new double[] {my - slope * mx, slope, r2};
  }

  private static double mean(double[] values) {
    double sum = 0;
    for (double v : values) {
      sum += v;
    }
    return sum / values.length;
  }

  /** One line: the shape, the model with its coefficients and units, R² and the exponent. */
  String describe(String what, String yUnit, String xUnit) {
    String model =
        switch (shape) {
          case "flat" -> String.format(Locale.ROOT, "about %s %s", num(intercept), yUnit);
          case "linear" ->
              String.format(
                  Locale.ROOT,
                  "%s %s + %s %s per %s",
                  num(intercept),
                  yUnit,
                  num(slope),
                  yUnit,
                  xUnit);
          default ->
              String.format(
                  Locale.ROOT,
                  "%s %s + %s %s per doubling",
                  num(intercept),
                  yUnit,
                  num(slope * Math.log(2)),
                  yUnit);
        };
    String quality =
        shape.equals("flat")
            ? String.format(Locale.ROOT, "largest / smallest %.2f", r2)
            : String.format(Locale.ROOT, "R² %.3f", r2);
    return String.format(
        Locale.ROOT, "%s: %s, %s (%s; ∝ x^%.2f)", what, shape, model, quality, exponent);
  }

  void writeTo(ObjectNode json) {
    json.put("shape", shape);
    json.put("intercept", intercept);
    json.put("slope", slope);
    json.put(shape.equals("flat") ? "largest_to_smallest" : "r2", Math.round(r2 * 1000) / 1000.0);
    json.put("power_exponent", Math.round(exponent * 100) / 100.0);
  }

  private static String num(double value) {
    double abs = Math.abs(value);
    if (abs >= 100) {
      return String.format(Locale.ROOT, "%,.0f", value).replace(',', ' ');
    }
    return abs >= 1
        ? String.format(Locale.ROOT, "%.1f", value)
        : String.format(Locale.ROOT, "%.3g", value);
  }
}
