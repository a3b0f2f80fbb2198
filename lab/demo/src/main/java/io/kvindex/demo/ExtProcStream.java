package io.kvindex.demo;

import com.google.protobuf.ByteString;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.config.core.v3.Metadata;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProtocolConfiguration;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * One request's ext_proc stream to an endpoint picker, as the proxy holds it, and the messages of
 * Envoy's external processing protocol the proxy sends on it. Not thread-safe: one request's thread
 * drives it (gRPC's threads only queue what arrives).
 */
final class ExtProcStream {
  static final String DESTINATION = "x-gateway-destination-endpoint";
  static final String LB = "envoy.lb";
  static final String SERVED = "x-gateway-destination-endpoint-served";
  private static final long WAIT_SECONDS = 10;
  private static final Object DONE = new Object();

  private final BlockingQueue<Object> received = new LinkedBlockingQueue<>();
  private ClientCallStreamObserver<ProcessingRequest> requests;

  /** The endpoint that serves the request, once the picker picked it. */
  String served;

  ExtProcStream(ManagedChannel channel) {
    ExternalProcessorGrpc.newStub(channel)
        .process(
            new ClientResponseObserver<ProcessingRequest, ProcessingResponse>() {
              @Override
              public void beforeStart(ClientCallStreamObserver<ProcessingRequest> stream) {
                requests = stream;
              }

              @Override
              public void onNext(ProcessingResponse value) {
                received.add(value);
              }

              @Override
              public void onError(Throwable t) {
                received.add(Status.fromThrowable(t));
              }

              @Override
              public void onCompleted() {
                received.add(DONE);
              }
            });
  }

  void send(ProcessingRequest request) {
    requests.onNext(request);
  }

  ProcessingResponse next() throws IOException {
    Object o = take();
    if (o instanceof ProcessingResponse r) {
      return r;
    }
    throw new IOException(
        "the picker's stream ended before its answer: " + (o == DONE ? "completed" : o));
  }

  /** Waits for the picker to complete the stream. */
  void end() throws IOException {
    Object o = take();
    if (o != DONE) {
      throw new IOException("the picker ended the stream with " + o);
    }
  }

  private Object take() throws IOException {
    try {
      Object o = received.poll(WAIT_SECONDS, TimeUnit.SECONDS);
      if (o == null) {
        throw new IOException("the picker did not answer within " + WAIT_SECONDS + " s");
      }
      return o;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while waiting for the picker", e);
    }
  }

  void halfClose() {
    requests.onCompleted();
  }

  void cancel() {
    requests.cancel("the proxy dropped the request", null);
  }

  static ProcessingRequest requestHeaders() {
    return ProcessingRequest.newBuilder()
        .setRequestHeaders(
            HttpHeaders.newBuilder()
                .setHeaders(
                    headers(
                        Map.of(
                            ":method", "POST",
                            ":path", "/v1/completions",
                            ":authority", "gateway",
                            "content-type", "application/json"))))
        .setProtocolConfig(
            ProtocolConfiguration.newBuilder()
                .setRequestBodyMode(BodySendMode.FULL_DUPLEX_STREAMED)
                .setResponseBodyMode(BodySendMode.FULL_DUPLEX_STREAMED))
        .build();
  }

  static ProcessingRequest responseHeaders(String served) {
    return ProcessingRequest.newBuilder()
        .setResponseHeaders(
            HttpHeaders.newBuilder()
                .setHeaders(headers(Map.of(":status", "200", "content-type", "application/json"))))
        .setMetadataContext(
            Metadata.newBuilder()
                .putFilterMetadata(
                    LB,
                    Struct.newBuilder()
                        .putFields(SERVED, Value.newBuilder().setStringValue(served).build())
                        .build()))
        .build();
  }

  static HeaderMap headers(Map<String, String> headers) {
    HeaderMap.Builder map = HeaderMap.newBuilder();
    headers.forEach(
        (k, v) ->
            map.addHeaders(
                HeaderValue.newBuilder().setKey(k).setRawValue(ByteString.copyFromUtf8(v))));
    return map.build();
  }

  static ProcessingRequest body(byte[] bytes, boolean endOfStream, boolean request) {
    HttpBody body =
        HttpBody.newBuilder()
            .setBody(ByteString.copyFrom(bytes))
            .setEndOfStream(endOfStream)
            .build();
    return request
        ? ProcessingRequest.newBuilder().setRequestBody(body).build()
        : ProcessingRequest.newBuilder().setResponseBody(body).build();
  }

  /** The pick as the header mutation sets it. */
  static String destination(ProcessingResponse answer) throws IOException {
    if (!answer.hasRequestHeaders()) {
      throw new IOException("the picker answered the request headers with " + answer);
    }
    for (HeaderValueOption h :
        answer.getRequestHeaders().getResponse().getHeaderMutation().getSetHeadersList()) {
      if (h.getHeader().getKey().equals(DESTINATION)) {
        return h.getHeader().getRawValue().toStringUtf8();
      }
    }
    throw new IOException("the picker's answer sets no " + DESTINATION + " header");
  }

  /** The streamed body answers up to the one marked end of stream, joined. */
  byte[] streamedBody(boolean request) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    while (true) {
      ProcessingResponse r = next();
      if (request ? !r.hasRequestBody() : !r.hasResponseBody()) {
        throw new IOException("expected a body answer, got " + r);
      }
      BodyResponse b = request ? r.getRequestBody() : r.getResponseBody();
      var chunk = b.getResponse().getBodyMutation().getStreamedResponse();
      out.writeBytes(chunk.getBody().toByteArray());
      if (chunk.getEndOfStream()) {
        return out.toByteArray();
      }
    }
  }
}
