package io.kvindex.demo;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.kvindex.simulator.Completion;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.SimulatedPod;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * kvindex routing as a Gateway API inference gateway does it: for each request the proxy's part of
 * Envoy's external processing protocol, played over a real gRPC socket to an endpoint picker
 * replica (the replicas take turns), in full-duplex streamed mode as the reference picker runs: the
 * request's headers and its body ({@code /v1/completions} with the token ids) go to the picker,
 * which answers with the pick in the {@code x-gateway-destination-endpoint} header and passes the
 * body back; the pod at that address serves it; its response ({@code usage} with {@code
 * cached_tokens}, as vLLM reports it) goes through the picker with the served endpoint in the
 * {@code envoy.lb} metadata, and the picker closes the loop by itself. The gateway sends nothing
 * else to kvindex: how each prediction compared is read from the pickers' own counters ({@code
 * kvindex.router.predictions}). Not thread-safe: one run drives it, a request at a time.
 */
final class PickerGateway implements Gateway, AutoCloseable {
  private static final int LOAD_WINDOW = 64;
  private static final byte NOT_OBSERVED = 2;
  private static final ObjectMapper JSON = new ObjectMapper();

  private final List<ManagedChannel> channels = new ArrayList<>();
  private final Map<String, String> podsByAddress;
  private final List<String> pods;
  private final String model;
  private final Supplier<long[]> predictionCounts;
  private final Supplier<Map<String, Long>> pickReasons;
  private final Deque<String> recent = new ArrayDeque<>();
  private final Map<String, Integer> load = new HashMap<>();
  private final List<Long> roundTrips = new ArrayList<>();
  private final List<Byte> outcomes = new ArrayList<>();
  private final List<String> servedBy = new ArrayList<>();
  private int turn;
  private int failures;
  private String lastFailure;
  private int observeFailures;
  private ExtProcStream current;

  /**
   * @param pickers the pickers' gRPC addresses
   * @param podsByAddress each pod's name by the {@code ip:port} the pickers return for it
   * @param model the model the requests name
   * @param predictionCounts the pickers' observed requests so far: exact, over, under
   * @param pickReasons the pickers' picks so far by the step that decided
   */
  PickerGateway(
      List<InetSocketAddress> pickers,
      Map<String, String> podsByAddress,
      String model,
      Supplier<long[]> predictionCounts,
      Supplier<Map<String, Long>> pickReasons) {
    if (pickers.isEmpty()) {
      throw new IllegalArgumentException("no endpoint picker to route through");
    }
    for (InetSocketAddress a : pickers) {
      channels.add(
          NettyChannelBuilder.forAddress(a.getHostString(), a.getPort()).usePlaintext().build());
    }
    this.podsByAddress = Map.copyOf(podsByAddress);
    this.pods = List.copyOf(podsByAddress.values());
    this.model = model;
    this.predictionCounts = predictionCounts;
    this.pickReasons = pickReasons;
  }

  @Override
  public SimulatedPod choose(InferenceRequest request, List<SimulatedPod> candidates) {
    long start = System.nanoTime();
    String pod;
    current = null;
    ExtProcStream x = new ExtProcStream(channels.get(turn++ % channels.size()));
    try {
      byte[] body = completionBody(request.promptTokens());
      x.send(ExtProcStream.requestHeaders());
      x.send(ExtProcStream.body(body, true, true));
      ProcessingResponse answer = x.next();
      if (answer.hasImmediateResponse()) {
        throw new IOException(
            "the picker answered "
                + answer.getImmediateResponse().getStatus().getCodeValue()
                + ": "
                + answer.getImmediateResponse().getBody().toStringUtf8().strip());
      }
      String destination = ExtProcStream.destination(answer);
      roundTrips.add(System.nanoTime() - start);
      byte[] passedOn = x.streamedBody(true);
      if (!java.util.Arrays.equals(passedOn, body)) {
        throw new IOException("the picker passed on a body other than the request's");
      }
      String first = destination.split(",")[0].strip();
      pod = podsByAddress.get(first);
      if (pod == null) {
        throw new IOException("the picker picked " + first + ", no pod's endpoint");
      }
      x.served = first;
      current = x;
    } catch (IOException e) {
      x.cancel();
      failures++;
      lastFailure = e.getMessage();
      pod = leastLoaded();
    }
    routed(pod);
    for (SimulatedPod p : candidates) {
      if (p.name().equals(pod)) {
        return p;
      }
    }
    throw new IllegalStateException("the picker picked " + pod + ", not a candidate");
  }

  /**
   * The response's way back: its headers with the endpoint that served it, its body with the
   * engine's usage; the picker passes it on and observes the usage against its prediction.
   */
  @Override
  public void served(InferenceRequest request, Completion completion) {
    servedBy.add(completion.pod());
    ExtProcStream x = current;
    current = null;
    if (x == null) {
      outcomes.add(NOT_OBSERVED);
      return;
    }
    long[] before = predictionCounts.get();
    try {
      byte[] body = completionResponse(completion);
      x.send(ExtProcStream.responseHeaders(x.served));
      ProcessingResponse headers = x.next();
      if (!headers.hasResponseHeaders()) {
        throw new IOException("the picker answered the response headers with " + headers);
      }
      x.send(ExtProcStream.body(body, true, false));
      if (!java.util.Arrays.equals(x.streamedBody(false), body)) {
        throw new IOException("the picker passed back a body other than the response's");
      }
      x.halfClose();
      x.end();
    } catch (IOException e) {
      x.cancel();
      observeFailures++;
      lastFailure = e.getMessage();
      outcomes.add(NOT_OBSERVED);
      return;
    }
    long[] after = predictionCounts.get();
    byte outcome = NOT_OBSERVED;
    if (after[0] > before[0]) {
      outcome = 0;
    } else if (after[1] > before[1]) {
      outcome = 1;
    } else if (after[2] > before[2]) {
      outcome = -1;
    } else {
      observeFailures++;
    }
    outcomes.add(outcome);
  }

  /** The pod refused the request: the proxy drops the stream (the picker counts it). */
  @Override
  public void refused(InferenceRequest request, SimulatedPod pod) {
    servedBy.add(null);
    if (current != null) {
      current.cancel();
      current = null;
    }
    outcomes.add(NOT_OBSERVED);
  }

  @Override
  public RouterPolicy.Predictions predictions(int from, int to) {
    return predictions(null, from, to);
  }

  @Override
  public RouterPolicy.Predictions predictions(String pod, int from, int to) {
    int exact = 0;
    int over = 0;
    int under = 0;
    for (int i = Math.max(0, from); i < Math.min(to, outcomes.size()); i++) {
      if (pod != null && !pod.equals(servedBy.get(i))) {
        continue;
      }
      switch (outcomes.get(i)) {
        case 0 -> exact++;
        case 1 -> over++;
        case -1 -> under++;
        default -> {
          // not observed
        }
      }
    }
    return new RouterPolicy.Predictions(exact, over, under);
  }

  @Override
  public List<String> servedBy() {
    return Collections.unmodifiableList(servedBy);
  }

  @Override
  public int observeFailures() {
    return observeFailures;
  }

  @Override
  public Map<String, Integer> reasons() {
    Map<String, Integer> out = new java.util.TreeMap<>();
    pickReasons.get().forEach((k, v) -> out.put(k, (int) (long) v));
    return out;
  }

  @Override
  public double roundTripMillis(double q) {
    if (roundTrips.isEmpty()) {
      return Double.NaN;
    }
    List<Long> sorted = new ArrayList<>(roundTrips);
    Collections.sort(sorted);
    int at = (int) Math.min(sorted.size() - 1, Math.ceil(q * sorted.size()) - 1);
    return sorted.get(Math.max(0, at)) / 1e6;
  }

  @Override
  public int failures() {
    return failures;
  }

  @Override
  public String lastFailure() {
    return lastFailure;
  }

  @Override
  public void close() {
    channels.forEach(ManagedChannel::shutdownNow);
  }

  private byte[] completionBody(int[] tokens) {
    ObjectNode body = JSON.createObjectNode();
    body.put("model", model);
    var prompt = body.putArray("prompt");
    for (int t : tokens) {
      prompt.add(t);
    }
    body.put("max_tokens", 1);
    return bytes(body);
  }

  /** The engine's answer as vLLM gives it: one choice, and the usage the pod reported. */
  private byte[] completionResponse(Completion completion) {
    ObjectNode body = JSON.createObjectNode();
    body.put("object", "text_completion");
    body.put("model", model);
    body.putArray("choices").addObject().put("index", 0).put("text", " ");
    ObjectNode usage = JSON.valueToTree(completion.usage());
    usage.put("completion_tokens", 1);
    usage.put("total_tokens", completion.promptTokens() + 1);
    body.set("usage", usage);
    return bytes(body);
  }

  private static byte[] bytes(ObjectNode body) {
    try {
      return JSON.writeValueAsBytes(body);
    } catch (IOException e) {
      throw new IllegalStateException("cannot write a JSON body", e);
    }
  }

  private void routed(String pod) {
    recent.addLast(pod);
    load.merge(pod, 1, Integer::sum);
    if (recent.size() > LOAD_WINDOW) {
      load.merge(recent.removeFirst(), -1, Integer::sum);
    }
  }

  private String leastLoaded() {
    String best = pods.get(0);
    for (String p : pods) {
      if (load.getOrDefault(p, 0) < load.getOrDefault(best, 0)) {
        best = p;
      }
    }
    return best;
  }
}
