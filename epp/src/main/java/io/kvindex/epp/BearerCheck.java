package io.kvindex.epp;

import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

/**
 * Refuses an ext_proc stream that does not carry {@code authorization: Bearer <token>} (Envoy:
 * {@code grpc_service.initial_metadata}) with {@code UNAUTHENTICATED}, before any message is read:
 * what the stream carries feeds the closed loop, which changes what the index credits a pod with.
 * Health checks stay open. The token is compared in constant time. Thread-safe.
 */
final class BearerCheck implements ServerInterceptor {
  private static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  private final byte[] expected;

  BearerCheck(String token) {
    this.expected = ("Bearer " + token).getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    if (!call.getMethodDescriptor().getServiceName().equals(ExternalProcessorGrpc.SERVICE_NAME)) {
      return next.startCall(call, headers);
    }
    String given = headers.get(AUTHORIZATION);
    if (given == null || !MessageDigest.isEqual(expected, given.getBytes(StandardCharsets.UTF_8))) {
      call.close(
          Status.UNAUTHENTICATED.withDescription(
              "the picker wants 'authorization: Bearer <token>' (its --auth-token-file secret);"
                  + " give the proxy's grpc_service initial_metadata"),
          new Metadata());
      return new ServerCall.Listener<>() {};
    }
    return next.startCall(call, headers);
  }
}
