/**
 * Load for a simulated fleet: {@link io.kvindex.simulator.load.Workload}s read from a
 * Mooncake-format trace or generated (the multi-tenant synthetic workload), and the {@link
 * io.kvindex.simulator.load.LoadRunner} that plays them against a fleet at a rate.
 */
package io.kvindex.simulator.load;
