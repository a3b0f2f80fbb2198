package io.kvindex.chaos;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * Samples an ingester's {@code /metrics} on a thread of its own, every {@link #EVERY}, and keeps
 * the most its heap and its memory budget reached: the heap in use (garbage included), the old
 * generation as the last collection left it (the JVM's GC notifications, as {@code
 * jvm_memory_usage_after_gc} of its maximum), and what the budget counted. Thread-safe: the figures
 * are read under its lock.
 */
final class HeapSampler implements AutoCloseable {
  static final Duration EVERY = Duration.ofMillis(200);

  private final URI metrics;
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
  private final Thread thread;
  private volatile boolean running = true;

  // Guarded by this.
  private long samples;
  private long failed;
  private double heapUsedMax;
  private double liveAfterGcMax;
  private double liveAfterGcFirst;
  private double budgetUsedMax;
  private double budget;
  private double budgetPeak;
  private double heapMax;
  private double replaysWaitingMax;
  private Map<String, Double> last = Map.of();

  HeapSampler(int httpPort) {
    this.metrics = URI.create("http://127.0.0.1:" + httpPort + "/metrics");
    this.thread = new Thread(this::loop, "chaos-heap-sampler");
    this.thread.setDaemon(true);
    this.thread.start();
  }

  private void loop() {
    while (running) {
      sample();
      try {
        Thread.sleep(EVERY.toMillis());
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /** Takes one sample now; false when the ingester did not answer. */
  boolean sample() {
    Map<String, Double> m;
    try {
      HttpResponse<String> r =
          http.send(
              HttpRequest.newBuilder(metrics).timeout(Duration.ofSeconds(5)).build(),
              HttpResponse.BodyHandlers.ofString());
      m = parse(r.body());
    } catch (IOException e) {
      synchronized (this) {
        failed++;
      }
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
    synchronized (this) {
      samples++;
      last = m;
      heapUsedMax = Math.max(heapUsedMax, sum(m, "jvm_memory_used_bytes", "area=\"heap\""));
      double live =
          sum(m, "jvm_memory_usage_after_gc", "pool=\"long-lived\"")
              * sum(m, "jvm_gc_max_data_size_bytes");
      if (liveAfterGcFirst == 0) {
        liveAfterGcFirst = live;
      }
      liveAfterGcMax = Math.max(liveAfterGcMax, live);
      budgetUsedMax = Math.max(budgetUsedMax, sum(m, "kvindex_ingester_memory_used_bytes"));
      budget = sum(m, "kvindex_ingester_memory_budget_bytes");
      budgetPeak = Math.max(budgetPeak, sum(m, "kvindex_ingester_memory_peak_bytes"));
      heapMax = Math.max(heapMax, sum(m, "jvm_gc_max_data_size_bytes"));
      replaysWaitingMax = Math.max(replaysWaitingMax, sum(m, "kvindex_ingester_replays_waiting"));
    }
    return true;
  }

  /** A Prometheus text page as series (name and labels) to value. */
  static Map<String, Double> parse(String page) {
    Map<String, Double> out = new HashMap<>();
    for (String line : page.split("\n")) {
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      int space = line.lastIndexOf(' ');
      try {
        out.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
      } catch (NumberFormatException | StringIndexOutOfBoundsException e) {
        // not a sample line
      }
    }
    return out;
  }

  /**
   * The sum of every series of the metric {@code name} ({@code label}, if not null, among its
   * labels).
   */
  static double sum(Map<String, Double> series, String name, String label) {
    double total = 0;
    for (Map.Entry<String, Double> e : series.entrySet()) {
      String k = e.getKey();
      boolean named = k.equals(name) || k.startsWith(name + "{");
      if (named && (label == null || k.contains(label))) {
        total += e.getValue();
      }
    }
    return total;
  }

  private static double sum(Map<String, Double> series, String name) {
    return sum(series, name, null);
  }

  /** The last sample's series whose name starts with {@code name}, by their labels. */
  synchronized Map<String, Double> last(String name) {
    Map<String, Double> out = new TreeMap<>();
    last.forEach(
        (k, v) -> {
          if (k.startsWith(name + "{") || k.equals(name)) {
            out.put(k.substring(name.length()), v);
          }
        });
    return out;
  }

  /** The sum of the last sample's series of {@code name}. */
  synchronized long lastTotal(String name) {
    return (long) sum(last, name);
  }

  /** Writes the figures. */
  synchronized void writeTo(ObjectNode out) {
    out.put("samples", samples);
    out.put("samples_failed", failed);
    out.put("sampled_every_ms", EVERY.toMillis());
    out.put("heap_max_bytes", (long) heapMax);
    out.put("heap_used_max_bytes", (long) heapUsedMax);
    out.put("heap_after_gc_first_bytes", (long) liveAfterGcFirst);
    out.put("heap_after_gc_max_bytes", (long) liveAfterGcMax);
    out.put("memory_budget_bytes", (long) budget);
    out.put("memory_budget_used_max_bytes", (long) budgetUsedMax);
    out.put("memory_budget_peak_bytes", (long) budgetPeak);
    out.put("replays_waiting_max", (long) replaysWaitingMax);
  }

  @Override
  public void close() throws InterruptedException {
    running = false;
    thread.interrupt();
    thread.join(5000);
  }
}
