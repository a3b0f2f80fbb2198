package io.kvindex.demo;

import io.kvindex.index.IndexMeters;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The meter registries of every router the demo's stack starts (replicas, endpoint pickers and
 * embedded routers), and the figures the demo sums over them. Not thread-safe: the stack's thread
 * adds registries; sums may be read from any thread once the routers are started.
 */
final class RouterMeters {
  private final List<PrometheusMeterRegistry> registries = new ArrayList<>();

  /** A new router's registry, counted from now on. */
  PrometheusMeterRegistry newRegistry() {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    registries.add(registry);
    return registry;
  }

  /** Every router's registry so far, in a new list the caller may add to. */
  List<MeterRegistry> registries() {
    return new ArrayList<>(registries);
  }

  /**
   * Lookups made, group lookups that read every block field instead of segments, and those that
   * read an overflowed segment's block fields.
   */
  Stack.IndexReads indexReads() {
    long lookups = 0;
    for (PrometheusMeterRegistry r : registries) {
      for (Timer t : r.find("kvindex.router.lookup").timers()) {
        lookups += t.count();
      }
    }
    return new Stack.IndexReads(
        lookups,
        counted(IndexMeters.LOOKUP_BLOCK_READS),
        counted(IndexMeters.LOOKUP_OVERFLOW_READS));
  }

  private long counted(String meter) {
    long n = 0;
    for (PrometheusMeterRegistry r : registries) {
      for (Counter c : r.find(meter).counters()) {
        n += (long) c.count();
      }
    }
    return n;
  }

  /** Lookups that ran out of their budget (answered "index unavailable"). */
  long lookupsOutOfBudget() {
    long n = 0;
    for (PrometheusMeterRegistry r : registries) {
      for (Timer t : r.find("kvindex.router.lookup").tag("outcome", "unavailable").timers()) {
        n += t.count();
      }
    }
    return n;
  }

  /** A counter's total by one of its tags (e.g. resync requests by outcome). */
  Map<String, Long> countedBy(String meter, String tag) {
    Map<String, Long> out = new TreeMap<>();
    for (PrometheusMeterRegistry r : registries) {
      for (Counter c : r.find(meter).counters()) {
        long n = (long) c.count();
        if (n > 0) {
          out.merge(c.getId().getTag(tag), n, Long::sum);
        }
      }
    }
    return out;
  }
}
