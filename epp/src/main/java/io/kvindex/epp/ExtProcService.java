package io.kvindex.epp;

import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.stub.StreamObserver;

/**
 * Envoy's {@code envoy.service.ext_proc.v3.ExternalProcessor}: one {@link ProcessStream} per HTTP
 * request the proxy processes. Thread-safe.
 */
final class ExtProcService extends ExternalProcessorGrpc.ExternalProcessorImplBase {
  private final ProcessStream.Shared shared;

  ExtProcService(ProcessStream.Shared shared) {
    this.shared = shared;
  }

  @Override
  public StreamObserver<ProcessingRequest> process(
      StreamObserver<ProcessingResponse> responseObserver) {
    return new ProcessStream(shared, responseObserver);
  }
}
