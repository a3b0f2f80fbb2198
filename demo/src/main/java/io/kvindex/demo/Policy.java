package io.kvindex.demo;

import io.kvindex.simulator.InferenceRequest;
import java.util.List;
import java.util.SplittableRandom;

/** Chooses the pod for each request of a run. Not thread-safe: one run drives it. */
interface Policy {

  /** The name shown in the summary. */
  String name();

  /** The pod for the request. */
  String choose(InferenceRequest request);

  /** Each pod in turn. */
  static Policy roundRobin(List<String> pods) {
    return new Policy() {
      private int next;

      @Override
      public String name() {
        return "round-robin";
      }

      @Override
      public String choose(InferenceRequest request) {
        return pods.get(next++ % pods.size());
      }
    };
  }

  /** A uniformly random pod, from a seeded generator so that runs repeat. */
  static Policy random(List<String> pods, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    return new Policy() {
      @Override
      public String name() {
        return "random";
      }

      @Override
      public String choose(InferenceRequest request) {
        return pods.get(random.nextInt(pods.size()));
      }
    };
  }
}
