package io.kvindex.demo;

import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.load.SyntheticWorkload;
import io.kvindex.simulator.load.TimedRequest;
import io.kvindex.simulator.load.Workload;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

/**
 * The requests of a run, from the simulator's workloads: its synthetic multi-tenant chat workload
 * or a Mooncake-format trace. The same list is replayed under every routing policy. Thread-safe
 * (stateless).
 */
final class Workloads {
  static final String MODEL = "sim-model";
  static final int BLOCK_SIZE = 16;

  /** Tokens per hash id in Mooncake's traces. */
  static final int TRACE_BLOCK_TOKENS = 512;

  private Workloads() {}

  /** At most {@code config.requestCount()} requests, in arrival order. */
  static List<TimedRequest> requests(DemoConfig config) {
    try (Workload workload = open(config)) {
      List<TimedRequest> out = new ArrayList<>();
      while (out.size() < config.requestCount() && workload.hasNext()) {
        out.add(workload.next());
      }
      if (out.isEmpty()) {
        throw new DemoException("the trace " + config.trace() + " holds no request");
      }
      return out;
    }
  }

  private static Workload open(DemoConfig config) {
    if (config.trace() == null) {
      return Workload.synthetic(
          SyntheticWorkload.Options.defaults()
              .withSeed(config.seed())
              .withRate(config.requestsPerSecond()));
    }
    try {
      return Workload.mooncakeTrace(config.trace(), TRACE_BLOCK_TOKENS);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the trace " + config.trace(), e);
    }
  }

  /**
   * The pods' capacity: the configured one, raised for a trace whose requests are larger, so that
   * each pod can keep a few of them.
   */
  static int capacityBlocks(DemoConfig config, List<InferenceRequest> requests) {
    int largest = 0;
    for (InferenceRequest r : requests) {
      largest = Math.max(largest, (r.promptLength() + r.outputLength()) / BLOCK_SIZE + 1);
    }
    return Math.max(config.capacityBlocks(), 4 * largest);
  }
}
