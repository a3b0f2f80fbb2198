/**
 * Which pods exist: {@link io.kvindex.ingester.discovery.PodSpec} (a pod's model, endpoints, ranks,
 * key mode and engine incarnation) and the {@link io.kvindex.ingester.discovery.PodDiscovery}
 * sources that report them, level-triggered: a static list from flags, a watched YAML or JSON file,
 * and the pods of a Kubernetes cluster, watched by label and read from their annotations.
 */
package io.kvindex.ingester.discovery;
