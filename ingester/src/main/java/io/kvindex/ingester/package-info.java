/**
 * The stateless ingester service: keeps the shared Redis index equal to what vLLM pods cache.
 *
 * <p>Entry points: {@link io.kvindex.ingester.Ingester#start(IngesterConfig)} (in-process) and
 * {@link io.kvindex.ingester.IngesterCommand} ({@code kvindex ingester}); every setting is declared
 * once in {@code IngesterSetting}. The parts, by package: {@code discovery} (which pods exist),
 * {@code lease} (which replica owns which stream), {@code stream} (one stream's ordering core and
 * the worker around it), {@code reconcile} (what each pod's {@code /metrics} says: sleep, restarts,
 * reachability). This package assembles them with the shared index, the meters and the HTTP
 * endpoint.
 */
package io.kvindex.ingester;
