/**
 * Which pods exist: {@link io.kvindex.ingester.discovery.PodSpec} (a pod's model, endpoints, ranks
 * and key mode) and the {@link io.kvindex.ingester.discovery.PodDiscovery} sources that report
 * them, level-triggered: a static list from flags, a watched YAML or JSON file.
 */
package io.kvindex.ingester.discovery;
