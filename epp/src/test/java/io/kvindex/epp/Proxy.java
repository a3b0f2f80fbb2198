package io.kvindex.epp;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.ListValue;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.config.core.v3.Metadata;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProtocolConfiguration;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.io.ByteArrayOutputStream;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Plays the proxy's part of the external processing protocol exactly as Envoy's ext_proc filter
 * does for each body mode, over a real gRPC channel: the messages it sends, in its order, what it
 * waits for before sending the next, and what it does with each answer (headers set, dynamic
 * metadata, bodies passed on). Not thread-safe (one test thread drives it).
 */
final class Proxy implements AutoCloseable {
  /** How the proxy sends bodies, and what it reports. */
  record Mode(BodySendMode request, BodySendMode response, boolean sendsProtocolConfig) {
    static Mode of(BodySendMode both) {
      return new Mode(both, both, true);
    }
  }

  /** The request as the client sent it. */
  record HttpRequest(String path, Map<String, String> headers, byte[] body, List<String> subset) {}

  /** What the picker told the proxy about the request: its pick, or a local reply. */
  record Routed(
      String destinationHeader,
      String destinationMetadata,
      boolean routeCacheCleared,
      byte[] bodyPassedOn,
      int immediateStatus,
      String immediateBody) {
    List<String> endpoints() {
      return List.of(destinationHeader.split(","));
    }
  }

  /** The upstream's response, as the proxy forwards it. */
  record HttpResponse(int status, String contentType, byte[] body) {}

  private final ManagedChannel channel;
  private final String token;

  Proxy(InetSocketAddress picker, String token) {
    this.channel =
        NettyChannelBuilder.forAddress(picker.getHostString(), picker.getPort())
            .usePlaintext()
            .maxInboundMessageSize(64 << 20)
            .build();
    this.token = token;
  }

  ManagedChannel channel() {
    return channel;
  }

  ProxyStream open() {
    return new ProxyStream(channel, token);
  }

  /**
   * The endpoint picked for a completion request on a stream of its own (ended after), sent in
   * full-duplex streamed mode, optionally restricted to one endpoint.
   */
  String pick(byte[] body, String only) {
    try (ProxyStream s = open()) {
      return pick(s, body, only);
    }
  }

  /** As {@link #pick(byte[], String)}, on a stream the caller holds. */
  String pick(ProxyStream s, byte[] body, String only) {
    Routed routed =
        request(
            s,
            Mode.of(BodySendMode.FULL_DUPLEX_STREAMED),
            new HttpRequest("/v1/completions", Map.of(), body, only == null ? null : List.of(only)),
            1);
    assertThat(routed.immediateStatus()).isZero();
    return routed.endpoints().get(0);
  }

  /**
   * Sends a request's headers and body as the mode has them sent, and reads the picker's answers in
   * the order the protocol fixes; on a local reply, the stream ends there.
   *
   * @param chunks how many pieces a streamed body comes in
   */
  Routed request(ProxyStream s, Mode mode, HttpRequest request, int chunks) {
    boolean noBody = request.body() == null;
    s.send(requestHeaders(mode, request, noBody));
    if (noBody || mode.request() == BodySendMode.NONE) {
      return headersAnswer(s.next(), null);
    }
    List<byte[]> pieces =
        split(request.body(), mode.request() == BodySendMode.BUFFERED ? 1 : chunks);
    switch (mode.request()) {
      case BUFFERED -> {
        ProcessingResponse headers = s.next();
        if (headers.hasImmediateResponse()) {
          return headersAnswer(headers, null);
        }
        assertThat(headers.hasRequestHeaders()).as("the headers' answer").isTrue();
        s.send(body(request.body(), true, true));
        ProcessingResponse answer = s.next();
        if (answer.hasImmediateResponse()) {
          return headersAnswer(answer, null);
        }
        assertThat(answer.hasRequestBody()).as("the body's answer").isTrue();
        return routed(answer.getRequestBody().getResponse(), answer, request.body());
      }
      case BUFFERED_PARTIAL -> {
        // Envoy buffers the body up to its limit and sends what it holds once: the whole body
        // (end of stream), or, when the body is larger than the limit, its first piece alone (not
        // the end of the stream; the rest then goes upstream without the picker seeing it).
        ProcessingResponse headers = s.next();
        if (headers.hasImmediateResponse()) {
          return headersAnswer(headers, null);
        }
        assertThat(headers.hasRequestHeaders()).as("the headers' answer").isTrue();
        s.send(body(pieces.get(0), pieces.size() == 1, true));
        ProcessingResponse answer = s.next();
        if (answer.hasImmediateResponse()) {
          return headersAnswer(answer, null);
        }
        assertThat(answer.hasRequestBody()).as("the body's answer").isTrue();
        assertThat(answer.getRequestBody().getResponse().hasBodyMutation()).isFalse();
        return routed(answer.getRequestBody().getResponse(), answer, request.body());
      }
      case STREAMED -> {
        // Envoy waits for the headers' answer before it streams the body.
        ProcessingResponse headers = s.next();
        Routed r = headersAnswer(headers, null);
        if (r.immediateStatus() != 0) {
          return r;
        }
        for (int i = 0; i < pieces.size(); i++) {
          s.send(body(pieces.get(i), i == pieces.size() - 1, true));
          ProcessingResponse answer = s.next();
          assertThat(answer.hasRequestBody()).isTrue();
          assertThat(answer.getRequestBody().getResponse().hasBodyMutation()).isFalse();
        }
        return new Routed(
            r.destinationHeader(),
            r.destinationMetadata(),
            r.routeCacheCleared(),
            request.body(),
            0,
            null);
      }
      case FULL_DUPLEX_STREAMED -> {
        // Headers and every chunk go without waiting; the answers come headers, body, in order.
        for (int i = 0; i < pieces.size(); i++) {
          s.send(body(pieces.get(i), i == pieces.size() - 1, true));
        }
        ProcessingResponse headers = s.next();
        if (headers.hasImmediateResponse()) {
          return headersAnswer(headers, null);
        }
        return headersAnswer(headers, streamedBody(s, true));
      }
      default -> throw new IllegalArgumentException("mode " + mode.request());
    }
  }

  /**
   * Sends the upstream's response as the mode has it sent, with the endpoint that served it in
   * {@code envoy.lb} (or none when {@code served} is null), and returns the body the picker passed
   * back.
   *
   * @param chunks how many pieces a streamed body comes in
   */
  byte[] response(ProxyStream s, Mode mode, HttpResponse response, String served, int chunks) {
    s.send(responseHeaders(response, served));
    ProcessingResponse headers = s.next();
    assertThat(headers.hasResponseHeaders()).as("the response headers' answer").isTrue();
    if (mode.response() == BodySendMode.NONE) {
      return response.body();
    }
    List<byte[]> pieces =
        split(
            response.body(),
            mode.response() == BodySendMode.STREAMED
                    || mode.response() == BodySendMode.FULL_DUPLEX_STREAMED
                ? chunks
                : 1);
    switch (mode.response()) {
      case BUFFERED, BUFFERED_PARTIAL, STREAMED -> {
        for (int i = 0; i < pieces.size(); i++) {
          s.send(responseBody(pieces.get(i), i == pieces.size() - 1));
          ProcessingResponse answer = s.next();
          assertThat(answer.hasResponseBody()).isTrue();
          assertThat(answer.getResponseBody().getResponse().hasBodyMutation()).isFalse();
        }
        return response.body();
      }
      case FULL_DUPLEX_STREAMED -> {
        for (int i = 0; i < pieces.size(); i++) {
          s.send(responseBody(pieces.get(i), i == pieces.size() - 1));
        }
        return streamedBody(s, false);
      }
      default -> throw new IllegalArgumentException("mode " + mode.response());
    }
  }

  /** The streamed body answers up to the one marked end of stream, joined. */
  private static byte[] streamedBody(ProxyStream s, boolean request) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    while (true) {
      ProcessingResponse r = s.next();
      BodyResponse b = request ? r.getRequestBody() : r.getResponseBody();
      assertThat(request ? r.hasRequestBody() : r.hasResponseBody()).as("a body answer").isTrue();
      assertThat(b.getResponse().getBodyMutation().hasStreamedResponse())
          .as("full duplex: the body comes back as streamed chunks")
          .isTrue();
      var chunk = b.getResponse().getBodyMutation().getStreamedResponse();
      assertThat(chunk.getBody().size()).isLessThanOrEqualTo(Messages.CHUNK_BYTES);
      out.writeBytes(chunk.getBody().toByteArray());
      if (chunk.getEndOfStream()) {
        return out.toByteArray();
      }
    }
  }

  private static Routed headersAnswer(ProcessingResponse r, byte[] passedOn) {
    if (r.hasImmediateResponse()) {
      return new Routed(
          null,
          null,
          false,
          null,
          r.getImmediateResponse().getStatus().getCodeValue(),
          r.getImmediateResponse().getBody().toStringUtf8());
    }
    assertThat(r.hasRequestHeaders()).as("the headers' answer").isTrue();
    return routed(r.getRequestHeaders().getResponse(), r, passedOn);
  }

  private static Routed routed(CommonResponse common, ProcessingResponse r, byte[] passedOn) {
    String header = null;
    for (HeaderValueOption h : common.getHeaderMutation().getSetHeadersList()) {
      if (h.getHeader().getKey().equals(Messages.DESTINATION)) {
        assertThat(h.getAppendAction())
            .as("the pick replaces any destination header the client sent")
            .isEqualTo(HeaderValueOption.HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD);
        header = h.getHeader().getRawValue().toStringUtf8();
      }
    }
    Value lb = r.getDynamicMetadata().getFieldsMap().get(Messages.LB_NAMESPACE);
    String metadata =
        lb == null
            ? null
            : lb.getStructValue().getFieldsMap().get(Messages.DESTINATION).getStringValue();
    return new Routed(header, metadata, common.getClearRouteCache(), passedOn, 0, null);
  }

  static ProcessingRequest requestHeaders(Mode mode, HttpRequest request, boolean endOfStream) {
    Map<String, String> all = new LinkedHashMap<>();
    all.put(":method", "POST");
    all.put(":path", request.path());
    all.put(":authority", "gateway");
    all.put("content-type", "application/json");
    all.putAll(request.headers());
    ProcessingRequest.Builder b =
        ProcessingRequest.newBuilder()
            .setRequestHeaders(
                HttpHeaders.newBuilder().setHeaders(headerMap(all)).setEndOfStream(endOfStream));
    if (mode.sendsProtocolConfig()) {
      b.setProtocolConfig(
          ProtocolConfiguration.newBuilder()
              .setRequestBodyMode(mode.request())
              .setResponseBodyMode(mode.response()));
    }
    if (request.subset() != null) {
      ListValue.Builder list = ListValue.newBuilder();
      request.subset().forEach(e -> list.addValues(Value.newBuilder().setStringValue(e)));
      b.setMetadataContext(
          Metadata.newBuilder()
              .putFilterMetadata(
                  Messages.SUBSET_NAMESPACE,
                  Struct.newBuilder()
                      .putFields(Messages.SUBSET, Value.newBuilder().setListValue(list).build())
                      .build()));
    }
    return b.build();
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

  static ProcessingRequest responseBody(byte[] bytes, boolean endOfStream) {
    return body(bytes, endOfStream, false);
  }

  static ProcessingRequest responseHeaders(HttpResponse response, String served) {
    Map<String, String> all = new LinkedHashMap<>();
    all.put(":status", Integer.toString(response.status()));
    all.put("content-type", response.contentType());
    ProcessingRequest.Builder b =
        ProcessingRequest.newBuilder()
            .setResponseHeaders(HttpHeaders.newBuilder().setHeaders(headerMap(all)));
    if (served != null) {
      b.setMetadataContext(
          Metadata.newBuilder()
              .putFilterMetadata(
                  Messages.LB_NAMESPACE,
                  Struct.newBuilder()
                      .putFields(Messages.SERVED, Value.newBuilder().setStringValue(served).build())
                      .build()));
    }
    return b.build();
  }

  private static HeaderMap headerMap(Map<String, String> headers) {
    HeaderMap.Builder map = HeaderMap.newBuilder();
    headers.forEach(
        (k, v) ->
            map.addHeaders(
                HeaderValue.newBuilder().setKey(k).setRawValue(ByteString.copyFromUtf8(v))));
    return map.build();
  }

  static List<byte[]> split(byte[] body, int pieces) {
    List<byte[]> out = new ArrayList<>();
    int n = Math.max(1, Math.min(pieces, body.length));
    int size = (body.length + n - 1) / n;
    for (int from = 0; from < body.length; from += size) {
      out.add(java.util.Arrays.copyOfRange(body, from, Math.min(body.length, from + size)));
    }
    if (out.isEmpty()) {
      out.add(new byte[0]);
    }
    return out;
  }

  @Override
  public void close() {
    channel.shutdownNow();
  }
}
