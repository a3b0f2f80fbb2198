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
public final class Workloads {
  public static final String MODEL = "sim-model";
  public static final int BLOCK_SIZE = 16;

  /** Tokens per hash id in Mooncake's traces. */
  static final int TRACE_BLOCK_TOKENS = 512;

  private Workloads() {}

  /** At most {@code config.requestCount()} requests, in arrival order. */
  public static List<TimedRequest> requests(DemoConfig config) {
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
   * A pod's capacity in trace runs, at the least: {@value} blocks (512k tokens), the simulator's
   * default pod and the capacity model's, about what an 80 GB GPU keeps for an 8B model.
   */
  static final int TRACE_CAPACITY_BLOCKS = 32_768;

  /**
   * The pods' capacity: the configured one, raised so that each pod can keep a few of the largest
   * requests; with a trace, at least {@link #TRACE_CAPACITY_BLOCKS}. A trace of conversations keeps
   * each pod serving many sessions at once, each as long as its history: pods sized only by the
   * largest request (5 512 blocks for the written trace, about 5 of the 16 sessions a pod of 16
   * serves) evicted about 450 blocks a request, and the index took about 870 block events a
   * request, more at the default rate than the one ingester left after the midway kill could apply
   * on two cores.
   */
  static int capacityBlocks(DemoConfig config, List<InferenceRequest> requests) {
    int largest = 0;
    for (InferenceRequest r : requests) {
      largest = Math.max(largest, (r.promptLength() + r.outputLength()) / BLOCK_SIZE + 1);
    }
    int floor = config.trace() == null ? config.capacityBlocks() : TRACE_CAPACITY_BLOCKS;
    return Math.max(Math.max(config.capacityBlocks(), floor), 4 * largest);
  }
}
