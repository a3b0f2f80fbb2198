package io.kvindex.epp;

import com.google.protobuf.ByteString;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.Metadata;
import java.util.Map;

/**
 * A picked request at its endpoint, from the pick to the end of its stream: the endpoint serving it
 * (the pick, until the proxy reports another: {@code envoy.lb} / {@code
 * x-gateway-destination-endpoint-served}), whether its prompt still counts as queued there, the
 * usage its engine reports in the response, and what the load book, the picker and the metrics
 * learn when the response ends or the stream closes before it. Not thread-safe: its {@link
 * ProcessStream}'s lock guards it.
 */
final class PickedRequest {
  private final ProcessStream.Shared shared;
  private final Decision decision;
  private Endpoint serving;
  private boolean servedKnown;
  private boolean prefilling = true;
  private UsageReader usage;
  private boolean failed;
  private boolean responseDone;

  /** The request {@code decision} picked an endpoint for, its answer carrying the pick. */
  PickedRequest(ProcessStream.Shared shared, Decision decision) {
    this.shared = shared;
    this.decision = decision;
    this.serving = decision.primary();
  }

  /** Whether the whole response has passed. */
  boolean responseDone() {
    return responseDone;
  }

  /** The endpoint the proxy reports serving the request, when this message carries it. */
  void served(Metadata metadata) {
    if (servedKnown) {
      return;
    }
    Value v = Messages.metadata(metadata, Messages.LB_NAMESPACE, Messages.SERVED);
    if (v == null || !v.hasStringValue()) {
      return;
    }
    servedKnown = true;
    String address = v.getStringValue().trim();
    Endpoint e = decision.at(address);
    String which = e == null ? "other" : e.equals(decision.primary()) ? "pick" : "fallback";
    if (e == null) {
      e = Endpoint.at(shared.candidates().endpoints(), address);
      which = e == null ? "unknown" : which;
    }
    shared.metrics().served(which);
    if (e != null && !e.equals(serving)) {
      shared.loads().moved(serving.key(), e.key(), decision.queueTicket());
      serving = e;
    }
  }

  /** The response's headers: its status, and whether its body is a stream of events. */
  void responseHeaders(Map<String, String> response) {
    String type = response.getOrDefault("content-type", "");
    String status = response.get(":status");
    failed = status != null && !status.startsWith("2");
    boolean events = type.contains("text/event-stream");
    usage = new UsageReader(events, shared.maxBodyBytes(), shared.json());
    if (!events || failed) {
      // A whole answer (or an error) comes after the first token, or instead of it; a stream of
      // events may open before it, so there the first body chunk tells.
      firstToken();
    }
  }

  /** A chunk of the response's body. */
  void responseBody(ByteString chunk) {
    firstToken();
    if (usage == null) {
      boolean events = UsageReader.looksLikeEvents(chunk);
      usage = new UsageReader(events, shared.maxBodyBytes(), shared.json());
    }
    usage.feed(chunk.toByteArray());
  }

  /** The whole response has passed: the usage is observed and the picker told (once). */
  void responseComplete() {
    if (responseDone) {
      return;
    }
    responseDone = true;
    firstToken();
    if (!servedKnown) {
      shared.metrics().served("missing");
    }
    shared
        .metrics()
        .observation(UsageObservation.observe(shared.router(), decision, serving, usage));
    shared.picker().answered(decision, serving, !failed);
  }

  /**
   * The stream has ended, however: the request no longer counts as open.
   *
   * @param halfClosed whether the proxy closed its side: else the request was cancelled or failed
   */
  void closed(boolean halfClosed) {
    firstToken();
    shared.loads().closed(serving.key());
    decision.counted().finished();
    if (!responseDone) {
      shared.metrics().observation("stream_closed");
      if (!halfClosed) {
        // Cancelled or failed before the response: the engine may never compute the prompt.
        shared.picker().answered(decision, null, false);
      }
    }
  }

  /**
   * The engine has begun answering (or never will): the request's prompt no longer counts as queued
   * there.
   */
  private void firstToken() {
    if (prefilling) {
      prefilling = false;
      shared.loads().firstToken(serving.key(), decision.queueTicket());
      decision.counted().firstToken();
    }
  }
}
