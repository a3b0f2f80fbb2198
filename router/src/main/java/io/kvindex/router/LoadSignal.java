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

  /** Every pod equally loaded: picks then follow the prefix alone. */
  static LoadSignal none() {
    return pod -> 0.0;
  }
}
