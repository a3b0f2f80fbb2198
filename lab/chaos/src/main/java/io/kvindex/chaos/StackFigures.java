package io.kvindex.chaos;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/** Figures summed over a stack's meter registries (every ingester's and router's). */
final class StackFigures {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final Supplier<List<MeterRegistry>> registries;

  /** Reads the registries given each time (replicas come and go). */
  StackFigures(Supplier<List<MeterRegistry>> registries) {
    this.registries = registries;
  }

  /** The sum of a counter over every registry, of its series with the tag given (or all). */
  long counted(String meter, String tag, String value) {
    long n = 0;
    for (MeterRegistry r : registries.get()) {
      var search = r.find(meter);
      if (tag != null) {
        search = search.tag(tag, value);
      }
      for (Counter c : search.counters()) {
        n += (long) c.count();
      }
    }
    return n;
  }

  /**
   * The longest event-to-index lag any ingester measured in the last minutes (Micrometer's max).
   */
  double lagMaxMillis() {
    double max = 0;
    for (MeterRegistry r : registries.get()) {
      for (Timer t : r.find("kvindex.ingester.lag").timers()) {
        max = Math.max(max, t.max(TimeUnit.MILLISECONDS));
      }
    }
    return max;
  }

  /** Calls failed with a real error, by {@code operation/reason}. */
  ObjectNode realErrors() {
    ObjectNode out = JSON.createObjectNode();
    for (MeterRegistry r : registries.get()) {
      for (Counter c : r.find("kvindex.redis.errors").counters()) {
        String key = c.getId().getTag("operation") + "/" + c.getId().getTag("reason");
        out.put(key, out.path(key).asLong(0) + (long) c.count());
      }
    }
    return out;
  }

  /**
   * Purges done for {@code reason} ({@code sleep}, {@code engine_restart}, ...), over every
   * registry.
   */
  long purgesDone(String reason) {
    long n = 0;
    for (MeterRegistry r : registries.get()) {
      for (Counter c :
          r.find("kvindex.ingester.purges")
              .tag("outcome", "done")
              .tag("reason", reason)
              .counters()) {
        n += (long) c.count();
      }
    }
    return n;
  }

  ObjectNode purgesByReason() {
    ObjectNode out = JSON.createObjectNode();
    for (MeterRegistry r : registries.get()) {
      for (Counter c : r.find("kvindex.ingester.purges").tag("outcome", "done").counters()) {
        String reason = c.getId().getTag("reason");
        out.put(reason, out.path(reason).asLong(0) + (long) c.count());
      }
    }
    return out;
  }
}
