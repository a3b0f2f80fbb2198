package io.kvindex.demo;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.CountAtBucket;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * The ingesters' own metrics, summed over the replicas (a killed replica's counters keep what it
 * did before it died). Immutable.
 *
 * @param events KV events applied
 * @param blocks blocks stored and removed
 * @param lagP50Millis median lag from an event's timestamp to its application, in ms (bucket bound)
 * @param lagP99Millis 99th percentile of that lag, in ms (bucket bound)
 * @param leasesHeld stream leases each live replica holds now
 * @param leaseMoves lease moves by kind (acquired, released, lost, ...)
 * @param purges completed purges by reason
 * @param restarts engine restarts detected
 * @param inference streams that began inferring their engine's evictions, by why (resync,
 *     takeover), and the blocks the models evicted and restored (evicted, restored)
 */
record IngestStats(
    long events,
    long blocks,
    double lagP50Millis,
    double lagP99Millis,
    Map<String, Integer> leasesHeld,
    Map<String, Long> leaseMoves,
    Map<String, Long> purges,
    long restarts,
    Map<String, Long> inference) {

  /** Reads every replica's registry; {@code live} names those whose lease gauge still counts. */
  static IngestStats read(Map<String, MeterRegistry> all, Map<String, MeterRegistry> live) {
    long events = 0;
    long blocks = 0;
    long restarts = 0;
    Map<String, Long> moves = new TreeMap<>();
    Map<String, Long> purges = new TreeMap<>();
    Map<String, Long> inference = new TreeMap<>();
    Map<Double, Long> lagBuckets = new TreeMap<>();
    for (MeterRegistry r : all.values()) {
      events += sum(r, "kvindex.ingester.events");
      blocks += sum(r, "kvindex.ingester.blocks");
      restarts += sum(r, "kvindex.ingester.engine.restarts");
      for (Counter c : r.find("kvindex.ingester.leases.moved").counters()) {
        moves.merge(c.getId().getTag("how"), (long) c.count(), Long::sum);
      }
      for (Counter c : r.find("kvindex.ingester.purges").tag("outcome", "done").counters()) {
        purges.merge(c.getId().getTag("reason"), (long) c.count(), Long::sum);
      }
      for (Counter c : r.find("kvindex.ingester.inference.starts").counters()) {
        inference.merge(c.getId().getTag("why"), (long) c.count(), Long::sum);
      }
      for (Counter c : r.find("kvindex.ingester.inferred.blocks").counters()) {
        inference.merge(c.getId().getTag("change"), (long) c.count(), Long::sum);
      }
      Timer lag = r.find("kvindex.ingester.lag").timer();
      if (lag != null) {
        for (CountAtBucket b : lag.takeSnapshot().histogramCounts()) {
          lagBuckets.merge(b.bucket(TimeUnit.MILLISECONDS), (long) b.count(), Long::sum);
        }
      }
    }
    Map<String, Integer> held = new LinkedHashMap<>();
    live.forEach(
        (name, r) -> {
          Gauge g = r.find("kvindex.ingester.leases.held").gauge();
          held.put(name, g == null ? 0 : (int) g.value());
        });
    return new IngestStats(
        events,
        blocks,
        percentile(lagBuckets, 0.50),
        percentile(lagBuckets, 0.99),
        held,
        moves,
        purges,
        restarts,
        inference);
  }

  private static long sum(MeterRegistry r, String name) {
    return (long) r.find(name).counters().stream().mapToDouble(Counter::count).sum();
  }

  /** The smallest bucket bound under which {@code q} of the (cumulative) counts fall, or NaN. */
  private static double percentile(Map<Double, Long> cumulative, double q) {
    long total = 0;
    for (long c : cumulative.values()) {
      total = Math.max(total, c);
    }
    if (total == 0) {
      return Double.NaN;
    }
    for (Map.Entry<Double, Long> e : cumulative.entrySet()) {
      if (e.getValue() >= q * total) {
        return e.getKey();
      }
    }
    return Double.POSITIVE_INFINITY;
  }

  /** Streams leased over all live replicas. */
  int leasedStreams() {
    return leasesHeld.values().stream().mapToInt(Integer::intValue).sum();
  }
}
