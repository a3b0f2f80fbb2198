package io.kvindex.simulator;

import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/** {@code --speed}: {@code max} or a positive number. Thread-safe (stateless). */
final class SpeedConverter implements ITypeConverter<Double> {
  @Override
  public Double convert(String value) {
    if (value.equalsIgnoreCase("max")) {
      return Double.POSITIVE_INFINITY;
    }
    try {
      double speed = Double.parseDouble(value);
      if (speed > 0) {
        return speed;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new TypeConversionException("'" + value + "' is not a positive number or max");
  }
}
