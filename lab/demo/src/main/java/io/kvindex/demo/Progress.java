package io.kvindex.demo;

import java.io.PrintWriter;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The live progress line: rewritten in place on a terminal, a new line every few seconds otherwise.
 * Not thread-safe: the run's thread writes it.
 */
final class Progress {
  private static final int PLAIN_EVERY_SECONDS = 5;

  private final PrintWriter out;
  private final boolean terminal = System.console() != null;
  private boolean open;
  private long lastPlainSecond = -1;

  Progress(PrintWriter out) {
    this.out = out;
  }

  /** A line of its own. */
  void line(String text) {
    if (open) {
      out.println();
      open = false;
    }
    out.println(text);
    out.flush();
  }

  /** The run's figures so far. */
  void update(Run.Result r, IngestStats ingest) {
    long seconds = r.elapsed().toSeconds();
    double perSecond = seconds == 0 ? 0 : ingest.events() / (double) r.elapsed().toMillis() * 1000;
    String text =
        String.format(
            Locale.ROOT,
            "[%3ds] %s: %d/%d routed, hit rate %.1f%% | ingested %d events (%.0f/s), lag p99 %s"
                + " | leases %s",
            seconds,
            r.policy(),
            r.routed(),
            r.total(),
            100 * r.hitRate(),
            ingest.events(),
            perSecond,
            ReportText.millis(ingest.lagP99Millis()),
            ingest.leasesHeld().entrySet().stream()
                .map(e -> e.getKey() + "=" + e.getValue())
                .collect(Collectors.joining(" ")));
    if (terminal) {
      out.print("\r" + text + "   ");
      open = true;
      out.flush();
    } else if (seconds / PLAIN_EVERY_SECONDS != lastPlainSecond) {
      lastPlainSecond = seconds / PLAIN_EVERY_SECONDS;
      line(text);
    }
  }

  /** The run finished. */
  void done(Run.Result r) {
    line(
        String.format(
            Locale.ROOT,
            "%s: routed %d requests in %.1f s, hit rate %.1f%%",
            r.policy(),
            r.routed(),
            r.elapsed().toMillis() / 1000.0,
            100 * r.hitRate()));
  }
}
