package io.kvindex.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Turns each scale sweep's points into its chart and its curves' fits: every curve is fitted
 * ({@link CurveFit}), the fit is written beside the points ({@code fits}) and printed as one line
 * under the chart. Thread-safe (stateless).
 */
final class ScaleCharts {
  private ScaleCharts() {}

  /** One curve to draw and fit: a field of the points against the sweep's x field. */
  private record Curve(String label, String field, String unit, boolean trackedOnly) {
    Curve(String label, String field, String unit) {
      this(label, field, unit, false);
    }
  }

  static void promptLength(ObjectNode json, Path png) {
    List<Curve> curves =
        List.of(
            new Curve("kvindex p50", "kvindex_p50_us", "µs"),
            new Curve("kvindex p99", "kvindex_p99_us", "µs"),
            new Curve("llm-d layout p50", "llmd_layout_p50_us", "µs"),
            new Curve("llm-d layout p99", "llmd_layout_p99_us", "µs"),
            new Curve("router hashing (sha256_cbor)", "hashing_us", "µs"));
    chart(
        json,
        png,
        "Lookup latency by prompt length",
        "prompt_blocks",
        "prompt length (blocks)",
        "block",
        List.of(new Group("latency (µs)", true, curves)));
  }

  static void candidates(ObjectNode json, Path png) {
    List<Curve> curves =
        List.of(
            new Curve("kvindex p50", "kvindex_p50_us", "µs"),
            new Curve("kvindex p99", "kvindex_p99_us", "µs"),
            new Curve("llm-d layout p50", "llmd_layout_p50_us", "µs"),
            new Curve("llm-d layout p99", "llmd_layout_p99_us", "µs"));
    chart(
        json,
        png,
        "Lookup latency by candidate pods (256-block prompts)",
        "candidates",
        "candidate pods",
        "candidate",
        List.of(new Group("latency (µs)", true, curves)));
  }

  static void indexSize(ObjectNode json, Path png) {
    chart(
        json,
        png,
        "kvindex by index size",
        "entries_millions",
        "(block, pod) entries, millions",
        "million entries",
        List.of(
            new Group(
                "lookup p50 (µs)", false, List.of(new Curve("lookup p50", "lookup_p50_us", "µs"))),
            new Group(
                "apply (blocks/s)",
                false,
                List.of(new Curve("apply blocks/s", "apply_blocks_per_s", "blocks/s"))),
            new Group("GC pass (s)", true, List.of(new Curve("GC pass", "gc_pass_s", "s"))),
            new Group(
                "memory (bytes/entry)",
                false,
                List.of(new Curve("memory per entry", "memory_bytes_per_entry", "B")))));
  }

  static void clusterGroups(ObjectNode json, Path png) {
    chart(
        json,
        png,
        "Lookups/s at 8 threads on a 3-primary Redis Cluster (2 cores: contention)",
        "groups",
        "index groups",
        "group",
        List.of(
            new Group(
                "lookups/s", false, List.of(new Curve("lookups/s", "lookups_per_s", "lookups/s"))),
            new Group(
                "latency (µs)",
                false,
                List.of(new Curve("p50", "p50_us", "µs"), new Curve("p99", "p99_us", "µs")))));
  }

  static void ingest(ObjectNode json, Path png) {
    chart(
        json,
        png,
        "One ingester: achieved load and lag against offered load",
        "offered_blocks_per_s",
        "offered (blocks/s)",
        "offered block/s",
        List.of(
            new Group(
                "achieved (blocks/s)",
                false,
                List.of(
                    new Curve("achieved", "achieved_blocks_per_s", "blocks/s"),
                    new Curve("offered", "offered_blocks_per_s", "blocks/s"))),
            new Group("lag p99 (ms)", true, List.of(new Curve("lag p99", "lag_p99_ms", "ms")))));
  }

  private record Group(String yLabel, boolean logY, List<Curve> curves) {}

  private static void chart(
      ObjectNode json,
      Path png,
      String title,
      String xField,
      String xLabel,
      String xUnit,
      List<Group> groups) {
    JsonNode points = json.path("points");
    if (points.size() < 2) {
      json.put("chart", "not drawn: fewer than two points");
      return;
    }
    ObjectNode fits = json.putObject("fits");
    List<String> notes = new ArrayList<>();
    List<Charts.Panel> panels = new ArrayList<>();
    boolean logX = true;
    for (Group group : groups) {
      List<Charts.Series> series = new ArrayList<>();
      for (Curve curve : group.curves()) {
        series.add(
            new Charts.Series(
                curve.label().replace(" up to the knee", ""),
                column(points, xField, curve.field(), false),
                column(points, curve.field(), curve.field(), false)));
        double[] x = column(points, xField, curve.field(), curve.trackedOnly());
        double[] y = column(points, curve.field(), curve.field(), curve.trackedOnly());
        if (x.length >= 2 && !curve.field().equals(xField)) {
          CurveFit fit = CurveFit.of(x, y);
          fit.writeTo(fits.putObject(curve.field()));
          String line = fit.describe(curve.label(), curve.unit(), xUnit);
          Reports.child(fits, curve.field()).put("line", line);
          notes.add(line);
        }
      }
      panels.add(new Charts.Panel(group.yLabel(), group.logY(), series));
    }
    Charts.write(png, title, xLabel, logX, panels, notes);
    json.put("chart", png.getFileName().toString());
  }

  /**
   * The x (or y) values of the points that have both fields (and, if {@code trackedOnly}, whose
   * offered load was tracked).
   */
  private static double[] column(
      JsonNode points, String field, String required, boolean trackedOnly) {
    List<Double> values = new ArrayList<>();
    for (JsonNode point : points) {
      boolean wanted = !trackedOnly || point.path("tracks").asBoolean();
      if (wanted && point.path(field).isNumber() && point.path(required).isNumber()) {
        values.add(point.path(field).asDouble());
      }
    }
    return values.stream().mapToDouble(Double::doubleValue).toArray();
  }
}
