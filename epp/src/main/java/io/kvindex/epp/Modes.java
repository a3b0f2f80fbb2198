package io.kvindex.epp;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;

/**
 * How the proxy sends the bodies of one request and its response: what its first message says
 * ({@code protocol_config}, sent by Envoy since 1.33), else the picker's configured assumption.
 * Immutable, so thread-safe.
 *
 * @param request the request body's mode
 * @param response the response body's mode
 * @param bodyWithoutWaiting whether the proxy sends the request body before the picker answers its
 *     headers (always so in full-duplex streamed mode)
 */
record Modes(BodySendMode request, BodySendMode response, boolean bodyWithoutWaiting) {

  /** The modes of a stream, from its first message. */
  static Modes of(ProcessingRequest first, Modes assumed) {
    if (!first.hasProtocolConfig()) {
      return assumed;
    }
    var config = first.getProtocolConfig();
    return new Modes(
        config.getRequestBodyMode(),
        config.getResponseBodyMode(),
        config.getSendBodyWithoutWaitingForHeaderResponse()
            || config.getRequestBodyMode() == BodySendMode.FULL_DUPLEX_STREAMED);
  }

  /**
   * Whether the picker holds its answer to the request headers until it has the whole body: the
   * body then comes without waiting for that answer.
   */
  boolean holdsHeaders() {
    return switch (request) {
      case FULL_DUPLEX_STREAMED -> true;
      case STREAMED -> bodyWithoutWaiting;
      default -> false;
    };
  }

  /** Whether the pick goes in the answer to the (buffered) request body. */
  boolean picksAtBufferedBody() {
    return request == BodySendMode.BUFFERED || request == BodySendMode.BUFFERED_PARTIAL;
  }
}
