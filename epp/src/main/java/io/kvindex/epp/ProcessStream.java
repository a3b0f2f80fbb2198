package io.kvindex.epp;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.kvindex.router.KvRouter;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One external processing stream: one HTTP request and its response, as the proxy shows them to the
 * picker. Thread-safe: gRPC delivers one stream's messages one at a time, and a decision that waits
 * for the index completes on another thread; both hold the stream's lock.
 *
 * <p>Implementation notes. Where the pick goes depends on how the proxy sends the request body
 * ({@link Modes}). Full-duplex streamed (the reference picker's mode), or streamed with the body
 * sent without waiting: the answer to the headers is held until the whole body has come, then sent
 * with the pick, followed by the body (passed on, in full duplex as chunks of at most 62 000
 * bytes), then the answer to the trailers if any: the protocol's order, headers, body, trailers.
 * Buffered: the headers are answered at once and the pick goes in the answer to the body, whose
 * header mutations the proxy still applies. No body (a request without one, a mode that sends none,
 * or streamed while the proxy waits for the headers' answer): the pick, by load, answers the
 * headers. On the way back every message is answered at once (the response body passed on as it
 * comes); the endpoint the proxy reports serving the request ({@code envoy.lb} / {@code
 * x-gateway-destination-endpoint-served}) is the one whose open count the request holds and the one
 * observed, with the usage its engine reported ({@link PickedRequest}). The pick's speculative
 * route is written after the answer carrying the pick has been sent (and, in full duplex, the body
 * passed back), never before; once the response has ended it is shortened to the time the engine's
 * events take to reach the index (moved to the endpoint that served the request, or taken back when
 * the response failed or the stream was cancelled before it): see {@link Picker#answered}.
 */
final class ProcessStream implements StreamObserver<ProcessingRequest> {
  private static final Logger log = LoggerFactory.getLogger(ProcessStream.class);

  /** What every stream of the service shares. Immutable; its parts are thread-safe. */
  record Shared(
      Picker picker,
      Candidates candidates,
      LoadBook loads,
      KvRouter router,
      EppMetrics metrics,
      ObjectMapper json,
      Modes assumed,
      int maxBodyBytes,
      Set<String> sheddableObjectives) {}

  private final Shared shared;
  private final StreamObserver<ProcessingResponse> out;
  private final AtomicBoolean closed = new AtomicBoolean();
  private ByteString body = ByteString.EMPTY;
  private Modes modes;
  private boolean silent;
  private boolean ended;
  private Map<String, String> headers = Map.of();
  private long headersAt;
  private List<Endpoint> candidates = List.of();
  private int heldChunks;

  /** The request once an endpoint is picked for it. */
  private PickedRequest picked;

  private boolean halfClosed;
  private boolean deciding;
  private final ArrayDeque<Object> held = new ArrayDeque<>();

  /** Held in place of the proxy's half-close while a decision is awaited. */
  private static final Object HALF_CLOSED = new Object();

  ProcessStream(Shared shared, StreamObserver<ProcessingResponse> out) {
    this.shared = shared;
    this.out = out;
    shared.metrics().streamOpened();
    if (out instanceof ServerCallStreamObserver<ProcessingResponse> call) {
      call.setOnCancelHandler(() -> close("cancelled"));
    }
  }

  @Override
  public synchronized void onNext(ProcessingRequest request) {
    if (deciding) {
      held.add(request);
      return;
    }
    handle(request);
  }

  private void handle(ProcessingRequest request) {
    if (ended) {
      return;
    }
    if (modes == null) {
      modes = Modes.of(request, shared.assumed());
    }
    silent = request.getObservabilityMode();
    try {
      switch (request.getRequestCase()) {
        case REQUEST_HEADERS -> requestHeaders(request);
        case REQUEST_BODY -> requestBody(request);
        case REQUEST_TRAILERS -> requestTrailers();
        case RESPONSE_HEADERS -> responseHeaders(request);
        case RESPONSE_BODY -> responseBody(request);
        case RESPONSE_TRAILERS -> responseTrailers(request);
        default -> {}
      }
    } catch (RuntimeException e) {
      fail(request.getRequestCase().toString(), e);
    }
  }

  /** Ends the stream with an error the proxy sees (gRPC's INTERNAL). */
  private void fail(String where, Throwable e) {
    log.error("ext_proc stream failed on a {} message", where, e);
    if (!ended) {
      ended = true;
      out.onError(Status.INTERNAL.withDescription("picker error: " + e).asRuntimeException());
    }
    close("error");
  }

  @Override
  public synchronized void onError(Throwable t) {
    close(Status.fromThrowable(t).getCode() == Status.Code.CANCELLED ? "cancelled" : "error");
  }

  @Override
  public synchronized void onCompleted() {
    if (deciding) {
      held.add(HALF_CLOSED);
      return;
    }
    halfClose();
  }

  private void halfClose() {
    halfClosed = true;
    if (!ended) {
      ended = true;
      out.onCompleted();
    }
    close(picked == null || picked.responseDone() ? "completed" : "cancelled");
  }

  // The request

  private void requestHeaders(ProcessingRequest request) {
    headersAt = System.nanoTime();
    headers = Messages.headers(request.getRequestHeaders());
    candidates = Subset.apply(request.getMetadataContext(), shared.candidates().endpoints());
    if (request.getRequestHeaders().getEndOfStream()) {
      pickAtHeaders("no_body");
    } else if (modes.picksAtBufferedBody()) {
      send(Messages.requestHeadersContinue());
    } else if (!modes.holdsHeaders()) {
      pickAtHeaders("body_not_sent");
    }
  }

  private void pickAtHeaders(String unscored) {
    decide(
        null,
        unscored,
        d -> {
          ProcessingResponse answer = Messages.requestHeaders(d.destination());
          shared.metrics().picked(d, false, System.nanoTime() - headersAt);
          send(answer); // counted first: whoever sees the answer sees it counted
          shared.picker().recordRoute(d);
        });
  }

  private void requestBody(ProcessingRequest request) {
    ByteString chunk = request.getRequestBody().getBody();
    if (picked != null) {
      // The headers were answered before the body came: pass each chunk on.
      send(Messages.requestBodyContinue());
      return;
    }
    if (body.size() + chunk.size() > shared.maxBodyBytes()) {
      refuse(
          413,
          "the request body is larger than "
              + shared.maxBodyBytes()
              + " bytes, the limit set by max-body-bytes (--max-body-bytes, KVINDEX_MAX_BODY_BYTES)");
      return;
    }
    body = body.concat(chunk);
    heldChunks++;
    if (request.getRequestBody().getEndOfStream() || modes.picksAtBufferedBody()) {
      bodyComplete(false);
    }
  }

  private void requestTrailers() {
    if (picked == null && modes.holdsHeaders()) {
      bodyComplete(true); // answers the trailers after the pick and the body, unless refused
      return;
    }
    send(Messages.requestTrailers());
  }

  /** The whole request body has come: pick, and answer what the mode wants answered. */
  private void bodyComplete(boolean trailersFollow) {
    long start = System.nanoTime();
    InferenceCall call = null;
    String unscored = null;
    InferenceCall.Api api = InferenceCall.Api.of(headers.get(":path"));
    if (api == null) {
      unscored = "unknown_path";
    } else {
      try {
        call = InferenceCall.parse(api, body.toByteArray(), shared.json());
      } catch (InferenceCall.Unreadable e) {
        unscored = e.reason;
        log.debug("request body not scored ({}): {}", e.reason, e.getMessage());
      }
    }
    shared.metrics().step("body_read", System.nanoTime() - start);
    decide(call, unscored, d -> answerBody(d, trailersFollow));
  }

  /** Sends the pick made at the body's end, then what the mode wants passed on. */
  private void answerBody(Decision d, boolean trailersFollow) {
    long answering = System.nanoTime();
    // The pick is counted before its answer goes out: whoever sees the answer sees it counted.
    if (modes.picksAtBufferedBody()) {
      ProcessingResponse answer = Messages.requestBody(d.destination());
      shared.metrics().picked(d, true, System.nanoTime() - headersAt);
      send(answer);
    } else {
      ProcessingResponse answer = Messages.requestHeaders(d.destination());
      shared.metrics().picked(d, true, System.nanoTime() - headersAt);
      send(answer);
      if (modes.request() == BodySendMode.FULL_DUPLEX_STREAMED) {
        Messages.streamed(body, !trailersFollow, true).forEach(this::send);
      } else {
        for (int i = 0; i < heldChunks; i++) {
          send(Messages.requestBodyContinue());
        }
      }
    }
    if (trailersFollow) {
      send(Messages.requestTrailers());
    }
    long end = System.nanoTime();
    shared.metrics().step("answer", end - answering);
    body = ByteString.EMPTY;
    shared.picker().recordRoute(d);
  }

  /**
   * Decides, then {@code answer}s with the decision, or sends the refusal. When the index must be
   * read, this returns at once: the stream's later messages are held (and its half-close) until the
   * decision has come and been answered, on the thread that completes it, so that the answers keep
   * the protocol's order and the caller's thread never waits for Redis.
   */
  private void decide(InferenceCall call, String unscored, Consumer<Decision> answer) {
    CompletableFuture<Decision> f =
        shared
            .picker()
            .decide(
                candidates,
                call,
                unscored,
                Messages.sheddable(headers, shared.sheddableObjectives()));
    if (f.isDone()) {
      decided(f, answer);
      return;
    }
    deciding = true;
    f.whenComplete(
        (d, e) -> {
          synchronized (this) {
            deciding = false;
            try {
              decided(f, answer);
            } catch (RuntimeException failure) {
              fail("decision", failure);
            }
            while (!deciding && !held.isEmpty()) {
              Object next = held.poll();
              if (next == HALF_CLOSED) {
                halfClose();
              } else {
                handle((ProcessingRequest) next);
              }
            }
          }
        });
  }

  private void decided(CompletableFuture<Decision> f, Consumer<Decision> answer) {
    Decision d;
    try {
      d = f.join();
    } catch (CompletionException | CancellationException e) {
      fail("decision", e.getCause() == null ? e : e.getCause());
      return;
    }
    if (ended) {
      // The stream ended while the index was read: the request went nowhere.
      if (d.picked()) {
        shared.loads().closed(d.primary().key());
        shared.loads().firstToken(d.primary().key(), d.queueTicket());
        d.counted().finished();
      }
      return;
    }
    if (!d.picked()) {
      refuse(d.status(), d.refusal());
      return;
    }
    picked = new PickedRequest(shared, d);
    answer.accept(d);
  }

  private void refuse(int status, String why) {
    shared.metrics().refused(status);
    send(Messages.immediate(status, why));
    ended = true;
    out.onCompleted();
    close("refused");
  }

  // The response

  private void responseHeaders(ProcessingRequest request) {
    if (picked != null) {
      picked.served(request.getMetadataContext());
      picked.responseHeaders(Messages.headers(request.getResponseHeaders()));
    }
    send(Messages.responseHeaders());
    if (request.getResponseHeaders().getEndOfStream() || modes.response() == BodySendMode.NONE) {
      responseComplete();
    }
  }

  private void responseBody(ProcessingRequest request) {
    ByteString chunk = request.getResponseBody().getBody();
    boolean end = request.getResponseBody().getEndOfStream();
    if (picked != null) {
      picked.served(request.getMetadataContext());
      picked.responseBody(chunk);
    }
    if (modes.response() == BodySendMode.FULL_DUPLEX_STREAMED) {
      Messages.streamed(chunk, end, false).forEach(this::send);
    } else {
      send(Messages.responseBodyContinue());
    }
    if (end) {
      responseComplete();
    }
  }

  private void responseTrailers(ProcessingRequest request) {
    if (picked != null) {
      picked.served(request.getMetadataContext());
    }
    send(Messages.responseTrailers());
    responseComplete();
  }

  private void responseComplete() {
    if (picked != null) {
      picked.responseComplete();
    }
  }

  private void send(ProcessingResponse response) {
    if (!silent) {
      out.onNext(response);
    }
  }

  /** The stream has ended, however: the request no longer counts as open. */
  private synchronized void close(String outcome) {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    ended = true;
    if (picked != null) {
      picked.closed(halfClosed);
    }
    shared.metrics().streamClosed(outcome);
  }
}
