package io.kvindex.bench;

import com.google.protobuf.ByteString;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.Metadata;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProtocolConfiguration;
import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import io.kvindex.epp.Endpoint;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The proxy's side of {@code bench epp}: one request through the endpoint picker as a full-duplex
 * proxy sends it (request headers and body, the pick, the response with its usage), and the request
 * bodies it sends. Thread-safe (stateless).
 */
final class PickerProxy {
  private PickerProxy() {}

  /** A completion request of the prompt's token ids. */
  static byte[] body(String model, int[] prompt) {
    StringBuilder out = new StringBuilder(prompt.length * 6 + 64);
    out.append("{\"model\":\"").append(model).append("\",\"max_tokens\":1,\"prompt\":[");
    for (int i = 0; i < prompt.length; i++) {
      out.append(i == 0 ? "" : ",").append(prompt[i]);
    }
    return out.append("]}").toString().getBytes(StandardCharsets.UTF_8);
  }

  private static final byte[] USAGE =
      ("{\"choices\":[],\"usage\":{\"prompt_tokens\":4096,\"completion_tokens\":1,"
              + "\"prompt_tokens_details\":{\"cached_tokens\":1024}}}")
          .getBytes(StandardCharsets.UTF_8);

  static final String COMPLETIONS = "/v1/completions";
  static final String CHAT = "/v1/chat/completions";

  /** The same prompt as chat text: one word per token, in a user message. */
  static byte[] chatBody(String model, int[] prompt) {
    StringBuilder out = new StringBuilder(prompt.length * 7 + 96);
    out.append("{\"model\":\"").append(model).append("\",\"max_tokens\":1,\"messages\":[");
    out.append("{\"role\":\"user\",\"content\":\"");
    for (int i = 0; i < prompt.length - 8; i++) {
      out.append(i == 0 ? "" : " ").append('w').append(prompt[i]);
    }
    return out.append("\"}]}").toString().getBytes(StandardCharsets.UTF_8);
  }

  /** {@link #exchange(ManagedChannel, byte[], Endpoint, String)} of a completion request. */
  static long exchange(ManagedChannel channel, byte[] body, Endpoint served) {
    return exchange(channel, body, served, COMPLETIONS);
  }

  /**
   * One request through the picker as a full-duplex proxy sends it; the nanoseconds to the pick. A
   * null {@code body}: a request without one (its headers end the stream).
   */
  static long exchange(ManagedChannel channel, byte[] body, Endpoint served, String path) {
    BlockingQueue<Object> answers = new LinkedBlockingQueue<>();
    StreamObserver<ProcessingRequest> out =
        ExternalProcessorGrpc.newStub(channel)
            .process(
                new StreamObserver<>() {
                  @Override
                  public void onNext(ProcessingResponse r) {
                    answers.add(r);
                  }

                  @Override
                  public void onError(Throwable t) {
                    answers.add(t);
                  }

                  @Override
                  public void onCompleted() {
                    answers.add("done");
                  }
                });
    long t0 = System.nanoTime();
    out.onNext(
        ProcessingRequest.newBuilder()
            .setRequestHeaders(
                HttpHeaders.newBuilder()
                    .setEndOfStream(body == null)
                    .setHeaders(
                        HeaderMap.newBuilder()
                            .addHeaders(header(":method", "POST"))
                            .addHeaders(header(":path", path))
                            .addHeaders(header("content-type", "application/json"))))
            .setProtocolConfig(
                ProtocolConfiguration.newBuilder()
                    .setRequestBodyMode(BodySendMode.FULL_DUPLEX_STREAMED)
                    .setResponseBodyMode(BodySendMode.FULL_DUPLEX_STREAMED))
            .build());
    if (body != null) {
      out.onNext(
          ProcessingRequest.newBuilder()
              .setRequestBody(
                  HttpBody.newBuilder().setBody(ByteString.copyFrom(body)).setEndOfStream(true))
              .build());
    }
    ProcessingResponse pick = (ProcessingResponse) take(answers);
    long nanos = System.nanoTime() - t0;
    if (!pick.hasRequestHeaders()) {
      throw new IllegalStateException("the picker answered " + pick);
    }
    while (body != null
        && !((ProcessingResponse) take(answers))
            .getRequestBody()
            .getResponse()
            .getBodyMutation()
            .getStreamedResponse()
            .getEndOfStream()) {
      // the body passed back, up to its last chunk
    }
    out.onNext(
        ProcessingRequest.newBuilder()
            .setResponseHeaders(
                HttpHeaders.newBuilder()
                    .setHeaders(
                        HeaderMap.newBuilder()
                            .addHeaders(header(":status", "200"))
                            .addHeaders(header("content-type", "application/json"))))
            .setMetadataContext(
                Metadata.newBuilder()
                    .putFilterMetadata(
                        "envoy.lb",
                        Struct.newBuilder()
                            .putFields(
                                "x-gateway-destination-endpoint-served",
                                Value.newBuilder().setStringValue(served.address()).build())
                            .build()))
            .build());
    take(answers);
    out.onNext(
        ProcessingRequest.newBuilder()
            .setResponseBody(
                HttpBody.newBuilder().setBody(ByteString.copyFrom(USAGE)).setEndOfStream(true))
            .build());
    take(answers);
    out.onCompleted();
    take(answers);
    return nanos;
  }

  private static HeaderValue header(String key, String value) {
    return HeaderValue.newBuilder().setKey(key).setRawValue(ByteString.copyFromUtf8(value)).build();
  }

  private static Object take(BlockingQueue<Object> answers) {
    try {
      Object o = answers.poll(10, TimeUnit.SECONDS);
      if (o == null || o instanceof Throwable) {
        throw new IllegalStateException("the picker did not answer: " + o);
      }
      return o;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }
}
