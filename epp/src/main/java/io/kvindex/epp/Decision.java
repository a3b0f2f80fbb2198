package io.kvindex.epp;

import io.kvindex.router.InFlight;
import io.kvindex.router.Pick;
import io.kvindex.router.Scores;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The picker's answer for one request: the endpoints it may go to, best first (the pick, then the
 * fallbacks), with what the index predicted for each; or a refusal. Immutable by convention, so
 * thread-safe.
 *
 * @param status 0 when endpoints were picked, else the HTTP status of the refusal (503: no ready
 *     endpoint; 429: shed; 413: body too large)
 * @param refusal why the request was refused, or null
 * @param endpoints the pick first, then the fallbacks; empty when refused
 * @param pick the pick policy's choice (its reason and the prediction for the chosen pod), or null
 *     when refused
 * @param scores the index's scores per pod (by pod name), or null when the request was not scored
 * @param model the index model the request was scored as, or null when not scored
 * @param unscored why the request was picked by load alone, or null when it was scored
 * @param prompts how many prompts the request carries
 * @param queueTicket the load book's ticket of the request's prompt tokens queued on the pick
 *     ({@link LoadBook#queued}), or -1 when refused
 * @param counted the request in the shared load view, told of its first token and end ({@link
 *     InFlight#NONE} without the view, or when the request was not scored)
 */
record Decision(
    int status,
    String refusal,
    List<Endpoint> endpoints,
    Pick pick,
    Scores scores,
    String model,
    String unscored,
    int prompts,
    long queueTicket,
    InFlight counted) {

  Decision {
    endpoints = List.copyOf(endpoints);
  }

  static Decision refused(int status, String why) {
    return new Decision(status, why, List.of(), null, null, null, null, 0, -1, InFlight.NONE);
  }

  boolean picked() {
    return status == 0;
  }

  Endpoint primary() {
    return endpoints.get(0);
  }

  /** The protocol's value: {@code ip:port} of each endpoint, comma-separated, best first. */
  String destination() {
    return endpoints.stream().map(Endpoint::address).collect(Collectors.joining(","));
  }

  /** The endpoint of this decision at {@code address}, or null. */
  Endpoint at(String address) {
    return Endpoint.at(endpoints, address);
  }
}
