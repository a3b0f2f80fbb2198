package io.kvindex.epp;

import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.MetadataUtils;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * One ext_proc stream as the proxy holds it: messages sent, responses taken in order with a
 * deadline, the stream ended or cancelled. Not thread-safe (one test thread drives it).
 */
final class ProxyStream implements AutoCloseable {
  private static final Object DONE = new Object();

  private final BlockingQueue<Object> received = new LinkedBlockingQueue<>();
  private ClientCallStreamObserver<ProcessingRequest> requests;

  ProxyStream(ManagedChannel channel, String token) {
    ExternalProcessorGrpc.ExternalProcessorStub stub = ExternalProcessorGrpc.newStub(channel);
    if (token != null) {
      Metadata headers = new Metadata();
      headers.put(
          Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER), "Bearer " + token);
      stub = stub.withInterceptors(MetadataUtils.newAttachHeadersInterceptor(headers));
    }
    stub.process(
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

  /** The next response; fails if the stream ended or none came within 10 s. */
  ProcessingResponse next() {
    Object o = take();
    if (o instanceof ProcessingResponse r) {
      return r;
    }
    throw new AssertionError("expected a response, got " + (o == DONE ? "the stream's end" : o));
  }

  /** How the stream ended: null when the picker completed it, else its error status. */
  Status end() {
    Object o = take();
    if (o == DONE) {
      return null;
    }
    if (o instanceof Status s) {
      return s;
    }
    throw new AssertionError("expected the stream's end, got " + o);
  }

  private Object take() {
    try {
      Object o = received.poll(10, TimeUnit.SECONDS);
      if (o == null) {
        throw new AssertionError("nothing came within 10 s");
      }
      return o;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }

  /** Nothing more from the proxy: the response has ended. */
  void halfClose() {
    requests.onCompleted();
  }

  /** The proxy drops the stream (the client went away). */
  void cancel() {
    requests.cancel("the client went away", null);
  }

  @Override
  public void close() {
    try {
      requests.onCompleted();
    } catch (IllegalStateException e) {
      // already ended
    }
  }
}
