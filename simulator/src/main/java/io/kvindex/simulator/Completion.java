package io.kvindex.simulator;

/**
 * What serving one request did. Immutable and thread-safe.
 *
 * @param pod the pod that served it
 * @param rank the data-parallel rank that served it
 * @param promptTokens the prompt length
 * @param cachedTokens prompt tokens served from the prefix cache (GPU or CPU tier)
 */
public record Completion(String pod, int rank, int promptTokens, int cachedTokens) {}
