package io.kvindex.bench;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.DecimalFormat;
import java.util.List;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.axis.NumberTickUnit;
import org.jfree.chart.axis.ValueAxis;
import org.jfree.chart.plot.CombinedDomainXYPlot;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.chart.title.TextTitle;
import org.jfree.chart.ui.RectangleEdge;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * PNG line charts of the scale sweeps (JFreeChart, headless): one or more panels sharing the x
 * axis, each with its own y axis and series, and the curves' fits as lines under the chart.
 * Thread-safe (stateless).
 */
final class Charts {
  private static final int WIDTH = 960;
  private static final int PANEL_HEIGHT = 240;
  private static final Color[] PALETTE = {
    new Color(0x1f77b4),
    new Color(0xd62728),
    new Color(0x2ca02c),
    new Color(0xff7f0e),
    new Color(0x9467bd),
    new Color(0x8c564b)
  };

  /** One curve: its name and points. */
  record Series(String name, double[] x, double[] y) {}

  /** One panel: its y axis label, whether it is logarithmic, and its curves. */
  record Panel(String yLabel, boolean logY, List<Series> series) {}

  private Charts() {}

  /**
   * Writes a chart of {@code panels} stacked over one x axis to {@code png}, with each line of
   * {@code notes} under it.
   */
  static void write(
      Path png, String title, String xLabel, boolean logX, List<Panel> panels, List<String> notes) {
    System.setProperty("java.awt.headless", "true");
    CombinedDomainXYPlot plot = new CombinedDomainXYPlot(axis(xLabel, logX));
    plot.setGap(12);
    for (Panel panel : panels) {
      plot.add(panel(panel), 1);
    }
    JFreeChart chart = new JFreeChart(title, new Font("SansSerif", Font.BOLD, 16), plot, true);
    chart.setBackgroundPaint(Color.WHITE);
    for (String note : notes) {
      TextTitle line = new TextTitle(note, new Font("SansSerif", Font.PLAIN, 12));
      line.setPosition(RectangleEdge.BOTTOM);
      chart.addSubtitle(line);
    }
    int height = 110 + PANEL_HEIGHT * panels.size() + 18 * notes.size();
    try {
      Files.createDirectories(png.toAbsolutePath().getParent());
      ChartUtils.saveChartAsPNG(png.toFile(), chart, WIDTH, height);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + png + ": " + e.getMessage(), e);
    }
  }

  private static XYPlot panel(Panel panel) {
    XYSeriesCollection data = new XYSeriesCollection();
    for (Series series : panel.series()) {
      XYSeries xy = new XYSeries(series.name(), false, true);
      for (int i = 0; i < series.x().length; i++) {
        if (!panel.logY() || series.y()[i] > 0) {
          xy.add(series.x()[i], series.y()[i]);
        }
      }
      data.addSeries(xy);
    }
    XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, true);
    for (int i = 0; i < panel.series().size(); i++) {
      renderer.setSeriesStroke(i, new BasicStroke(2f));
      renderer.setSeriesPaint(i, PALETTE[i % PALETTE.length]);
    }
    XYPlot plot = new XYPlot(data, null, axis(panel.yLabel(), panel.logY()), renderer);
    plot.setBackgroundPaint(Color.WHITE);
    plot.setDomainGridlinePaint(Color.LIGHT_GRAY);
    plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
    return plot;
  }

  private static ValueAxis axis(String label, boolean log) {
    if (log) {
      LogAxis axis = new LogAxis(label);
      axis.setBase(10);
      axis.setTickUnit(new NumberTickUnit(1));
      axis.setMinorTickCount(9);
      axis.setMinorTickMarksVisible(true);
      axis.setNumberFormatOverride(new DecimalFormat("#,##0.###"));
      axis.setSmallestValue(1e-3);
      return axis;
    }
    NumberAxis axis = new NumberAxis(label);
    axis.setAutoRangeIncludesZero(true);
    return axis;
  }
}
