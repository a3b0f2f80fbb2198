package io.kvindex.demo;

import io.kvindex.simulator.PodRouter;

/**
 * A routing policy under its summary name.
 *
 * @param name the name shown in the summary
 * @param router the simulator's routing function
 */
record Policy(String name, PodRouter router) {
  static final String KVINDEX = "kvindex";
  static final String ROUND_ROBIN = "round-robin";
  static final String RANDOM = "random";

  /** A baseline policy by name: {@code round-robin} or {@code random} (seeded). */
  static Policy baseline(String name, long seed) {
    return switch (name) {
      case ROUND_ROBIN -> new Policy(name, PodRouter.roundRobin());
      case RANDOM -> new Policy(name, PodRouter.random(seed));
      default -> throw new IllegalArgumentException("no baseline policy " + name);
    };
  }
}
