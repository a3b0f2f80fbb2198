/**
 * The stateless ingester service: keeps the shared Redis index equal to what vLLM pods cache.
 *
 * <p>Entry points: {@link io.kvindex.ingester.Ingester#start(IngesterConfig)} (in-process) and
 * {@link io.kvindex.ingester.IngesterCommand} ({@code kvindex ingester}). Pods come from a {@link
 * io.kvindex.ingester.PodDiscovery} (static list, watched YAML/JSON file; a Kubernetes source can
 * be added by implementing the interface).
 *
 * <p>Inside: one stream worker thread per (pod, data-parallel rank) applies batches in sequence
 * order through the index (replay on gaps, purge on restart, clear, sleep, removal,
 * unreachability); a coordinator leases streams fairly across replicas with fencing tokens; a
 * reconciler scrapes each owned pod's {@code /metrics}; HTTP serves {@code /metrics}, {@code
 * /healthz}, {@code /readyz}.
 */
package io.kvindex.ingester;
