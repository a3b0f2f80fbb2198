package io.kvindex.simulator;

/**
 * What serving one request in (simulated) time did: where, what it found cached, and when its first
 * and last tokens came out. Times are seconds on the run's simulated clock. Immutable.
 *
 * @param pod the pod that served it
 * @param rank the data-parallel rank that served it
 * @param promptTokens the prompt length
 * @param cachedTokens prompt tokens its first admission found in the prefix cache
 * @param outputTokens tokens generated
 * @param arrival when it reached the engine
 * @param firstToken when its first token came out (the end of the step that finished its prefill)
 * @param finished when its last token came out
 * @param preemptions how often the engine preempted it for want of KV blocks
 */
public record TimedCompletion(
    String pod,
    int rank,
    int promptTokens,
    int cachedTokens,
    int outputTokens,
    double arrival,
    double firstToken,
    double finished,
    int preemptions) {

  /** Time to first token, seconds. */
  public double ttft() {
    return firstToken - arrival;
  }

  /** End-to-end latency, seconds. */
  public double endToEnd() {
    return finished - arrival;
  }

  /** The same figures as an instant {@link Completion} (what a gateway reads from the usage). */
  public Completion completion() {
    return new Completion(pod, rank, promptTokens, cachedTokens);
  }
}
