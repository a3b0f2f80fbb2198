package io.kvindex.router;

/**
 * How busy a pod is right now, in any unit where more means busier, for example the number of
 * running plus waiting requests that the gateway itself tracks, or vLLM's {@code
 * vllm:num_requests_running}. Implementations must be thread-safe and fast: {@link KvRouter#pick}
 * calls it once per candidate on the request path.
 */
@FunctionalInterface
public interface LoadSignal {
  /** The current load of {@code pod}; never negative. Unknown pods should report zero. */
  double load(String pod);

  /**
   * Prompt tokens the pod has still to compute before a new request's would start, as far as the
   * caller knows: for example the uncached prompt tokens of the requests the gateway sent there
   * whose first token has not come back. {@link PickPolicy#estimatedTtft} weighs them; {@code NaN}
   * (the default) means not known, and the policy then derives them from {@link #load}.
   */
  default double queuedTokens(String pod) {
    return Double.NaN;
  }

  /** Every pod equally loaded: picks then follow the prefix alone. */
  static LoadSignal none() {
    return pod -> 0.0;
  }
}
