package io.kvindex.simulator.load;

import io.kvindex.simulator.InferenceRequest;
import java.time.Duration;
import java.util.Objects;

/**
 * A request of a workload and when it arrives. Immutable and thread-safe.
 *
 * @param at the arrival time since the start of the workload
 * @param model the model it asks for, or {@code null} for the fleet's first model
 * @param request the request
 */
public record TimedRequest(Duration at, String model, InferenceRequest request) {
  public TimedRequest {
    Objects.requireNonNull(at, "at");
    Objects.requireNonNull(request, "request");
  }
}
