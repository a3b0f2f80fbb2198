package io.kvindex.epp;

import com.google.protobuf.ByteString;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption.HeaderAppendAction;
import io.envoyproxy.envoy.config.core.v3.Metadata;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.HeadersResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ImmediateResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.StreamedBodyResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.TrailersResponse;
import io.envoyproxy.envoy.type.v3.HttpStatus;
import io.envoyproxy.envoy.type.v3.StatusCode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The endpoint picker protocol's names, and the ext_proc messages the picker sends, built in one
 * place. Thread-safe (stateless).
 */
final class Messages {
  /** The request header, and the {@code envoy.lb} metadata key, that carry the pick. */
  static final String DESTINATION = "x-gateway-destination-endpoint";

  /** The metadata namespace of the pick, and of the served endpoint the proxy reports. */
  static final String LB_NAMESPACE = "envoy.lb";

  /** The proxy's report, in {@code envoy.lb}, of the endpoint that served the request. */
  static final String SERVED = "x-gateway-destination-endpoint-served";

  /** The metadata namespace of the proxy's candidate subset. */
  static final String SUBSET_NAMESPACE = "envoy.lb.subset_hint";

  /** The key, in {@code envoy.lb.subset_hint}, of the endpoints the pick must come from. */
  static final String SUBSET = "x-gateway-destination-endpoint-subset";

  /** The request headers that name the request's inference objective (current, then former). */
  static final List<String> OBJECTIVE =
      List.of("x-llm-d-inference-objective", "x-gateway-inference-objective");

  /**
   * The largest body chunk the picker streams back: the reference picker's 62 000 bytes, under the
   * 64 KiB some proxies accept per chunk.
   */
  static final int CHUNK_BYTES = 62_000;

  private Messages() {}

  /** Whether the request's inference objective (its headers') is one of {@code sheddable}. */
  static boolean sheddable(Map<String, String> headers, Set<String> sheddable) {
    for (String header : OBJECTIVE) {
      String objective = headers.get(header);
      if (objective != null) {
        return sheddable.contains(objective);
      }
    }
    return false;
  }

  /** The request's headers, names lower case, each value from its raw bytes (else its string). */
  static Map<String, String> headers(HttpHeaders headers) {
    Map<String, String> out = new HashMap<>();
    for (HeaderValue h : headers.getHeaders().getHeadersList()) {
      String value = h.getRawValue().isEmpty() ? h.getValue() : h.getRawValue().toStringUtf8();
      out.put(h.getKey().toLowerCase(java.util.Locale.ROOT), value);
    }
    return out;
  }

  /** The string at {@code namespace}/{@code key} of request metadata, or null. */
  static Value metadata(Metadata metadata, String namespace, String key) {
    Struct ns = metadata.getFilterMetadataMap().get(namespace);
    return ns == null ? null : ns.getFieldsMap().get(key);
  }

  /** The metadata carrying the pick: {@code envoy.lb: {x-gateway-destination-endpoint: ...}}. */
  static Struct destinationMetadata(String destination) {
    Struct lb =
        Struct.newBuilder()
            .putFields(DESTINATION, Value.newBuilder().setStringValue(destination).build())
            .build();
    return Struct.newBuilder()
        .putFields(LB_NAMESPACE, Value.newBuilder().setStructValue(lb).build())
        .build();
  }

  /**
   * The pick as a common response: the destination header set (replacing any the client sent), the
   * route cache cleared so that the proxy routes by it.
   */
  static CommonResponse destination(String destination) {
    HeaderValueOption header =
        HeaderValueOption.newBuilder()
            .setHeader(
                HeaderValue.newBuilder()
                    .setKey(DESTINATION)
                    .setRawValue(ByteString.copyFrom(destination, StandardCharsets.UTF_8)))
            .setAppendAction(HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD)
            .build();
    return CommonResponse.newBuilder()
        .setClearRouteCache(true)
        .setHeaderMutation(HeaderMutation.newBuilder().addSetHeaders(header))
        .build();
  }

  /** The answer to the request headers that carries the pick. */
  static ProcessingResponse requestHeaders(String destination) {
    return ProcessingResponse.newBuilder()
        .setRequestHeaders(HeadersResponse.newBuilder().setResponse(destination(destination)))
        .setDynamicMetadata(destinationMetadata(destination))
        .build();
  }

  /** The answer to a buffered request body that carries the pick (its headers still mutable). */
  static ProcessingResponse requestBody(String destination) {
    return ProcessingResponse.newBuilder()
        .setRequestBody(BodyResponse.newBuilder().setResponse(destination(destination)))
        .setDynamicMetadata(destinationMetadata(destination))
        .build();
  }

  /** The plain answer to request headers: go on, unchanged. */
  static ProcessingResponse requestHeadersContinue() {
    return ProcessingResponse.newBuilder()
        .setRequestHeaders(HeadersResponse.getDefaultInstance())
        .build();
  }

  /** The plain answer to a request body chunk: pass it on unchanged. */
  static ProcessingResponse requestBodyContinue() {
    return ProcessingResponse.newBuilder()
        .setRequestBody(BodyResponse.getDefaultInstance())
        .build();
  }

  static ProcessingResponse requestTrailers() {
    return ProcessingResponse.newBuilder()
        .setRequestTrailers(TrailersResponse.getDefaultInstance())
        .build();
  }

  static ProcessingResponse responseHeaders() {
    return ProcessingResponse.newBuilder()
        .setResponseHeaders(HeadersResponse.getDefaultInstance())
        .build();
  }

  static ProcessingResponse responseBodyContinue() {
    return ProcessingResponse.newBuilder()
        .setResponseBody(BodyResponse.getDefaultInstance())
        .build();
  }

  static ProcessingResponse responseTrailers() {
    return ProcessingResponse.newBuilder()
        .setResponseTrailers(TrailersResponse.getDefaultInstance())
        .build();
  }

  /**
   * A body passed back in full-duplex streamed mode: chunks of at most {@link #CHUNK_BYTES}, the
   * last marked end of stream when {@code endOfStream} (one empty chunk for an empty body).
   *
   * @param request whether it is the request's body (else the response's)
   */
  static List<ProcessingResponse> streamed(ByteString body, boolean endOfStream, boolean request) {
    List<ProcessingResponse> out = new ArrayList<>();
    int from = 0;
    do {
      int length = Math.min(CHUNK_BYTES, body.size() - from);
      boolean last = from + length >= body.size();
      StreamedBodyResponse chunk =
          StreamedBodyResponse.newBuilder()
              .setBody(body.substring(from, from + length))
              .setEndOfStream(endOfStream && last)
              .build();
      BodyResponse response =
          BodyResponse.newBuilder()
              .setResponse(
                  CommonResponse.newBuilder()
                      .setBodyMutation(BodyMutation.newBuilder().setStreamedResponse(chunk)))
              .build();
      ProcessingResponse.Builder message = ProcessingResponse.newBuilder();
      out.add(
          (request ? message.setRequestBody(response) : message.setResponseBody(response)).build());
      from += length;
    } while (from < body.size());
    return out;
  }

  /** A local reply of the proxy in the picker's stead: {@code status} with a line of text. */
  static ProcessingResponse immediate(int status, String why) {
    return ProcessingResponse.newBuilder()
        .setImmediateResponse(
            ImmediateResponse.newBuilder()
                .setStatus(HttpStatus.newBuilder().setCode(StatusCode.forNumber(status)))
                .setBody(ByteString.copyFrom(why + "\n", StandardCharsets.UTF_8))
                .setDetails("kvindex_epp_" + status))
        .build();
  }
}
