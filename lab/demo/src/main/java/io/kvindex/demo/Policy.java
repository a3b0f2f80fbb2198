package io.kvindex.demo;

import io.kvindex.simulator.PodRouter;

/**
 * A routing policy under its summary name.
 *
 * @param name the name shown in the summary
 * @param router the simulator's routing function
 */
public record Policy(String name, PodRouter router) {
  public static final String KVINDEX = "kvindex";
  public static final String ROUND_ROBIN = "round-robin";
  static final String RANDOM = "random";
  static final String ORACLE = "oracle";

  /**
   * A baseline policy by name: {@code oracle} (the pods' true caches, the router's pick policy),
   * {@code round-robin} or {@code random} (seeded).
   */
  static Policy baseline(String name, long seed) {
    return switch (name) {
      case ORACLE -> new Policy(name, PodRouter.oracle(new RouterOraclePick()));
      case ROUND_ROBIN -> new Policy(name, PodRouter.roundRobin());
      case RANDOM -> new Policy(name, PodRouter.random(seed));
      default -> throw new IllegalArgumentException("no baseline policy " + name);
    };
  }
}
