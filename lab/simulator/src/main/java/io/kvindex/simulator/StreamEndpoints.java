package io.kvindex.simulator;

/**
 * Where one engine (pod x data-parallel rank) publishes. Immutable and thread-safe.
 *
 * @param pod the pod name
 * @param rank the data-parallel rank
 * @param publish the PUB endpoint: the bound address with its real port, or the address the pod
 *     connects out to
 * @param publishBound whether the pod bound {@code publish} (else it connects to it)
 * @param replay the bound replay ROUTER endpoint, or {@code null} when replay is off
 * @param topic the topic frame
 */
public record StreamEndpoints(
    String pod, int rank, String publish, boolean publishBound, String replay, String topic) {}
