package io.kvindex.epp;

import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMixedDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.ServerRequest;
import io.fabric8.mockwebserver.ServerResponse;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.redis.RedisConnector;
import io.kvindex.router.KvRouter;
import io.kvindex.router.ModelKeys;
import io.kvindex.testing.Fresh;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The candidates of an InferencePool, from a real (mock) API server with list and watch: ready pods
 * the selector picks, once per target port, following the pool and its pods as they change.
 */
@UsesRedis
class InferencePoolCandidatesTest {
  private static final String NS = "models";

  private KubernetesMockServer server;
  private KubernetesClient client;

  @BeforeEach
  void start() {
    // CRUD mode: a real API with list and watch, for any resource, InferencePools included.
    Map<ServerRequest, Queue<ServerResponse>> responses = new HashMap<>();
    server =
        new KubernetesMockServer(
            new Context(Serialization.jsonMapper()),
            new MockWebServer(),
            responses,
            new KubernetesMixedDispatcher(responses),
            false);
    server.init(InetAddress.getLoopbackAddress(), 0);
    client = server.createClient();
  }

  @AfterEach
  void stop() {
    client.close();
    server.destroy();
  }

  private void pool(List<Integer> ports) {
    GenericKubernetesResource pool =
        new GenericKubernetesResourceBuilder()
            .withApiVersion("inference.networking.k8s.io/v1")
            .withKind(InferencePoolCandidates.KIND)
            .withNewMetadata()
            .withName("vllm")
            .withNamespace(NS)
            .endMetadata()
            .addToAdditionalProperties(
                "spec",
                Map.of(
                    "selector",
                    Map.of("matchLabels", Map.of("app", "vllm")),
                    "targetPorts",
                    ports.stream().map(p -> Map.of("number", p)).toList()))
            .build();
    client
        .genericKubernetesResources(InferencePoolCandidates.POOLS)
        .inNamespace(NS)
        .resource(pool)
        .createOr(r -> r.update());
  }

  private void pod(String name, String ip, String app, boolean ready, Map<String, String> notes) {
    Pod pod =
        new PodBuilder()
            .withNewMetadata()
            .withName(name)
            .withNamespace(NS)
            .withLabels(Map.of("app", app))
            .withAnnotations(notes)
            .endMetadata()
            .withNewStatus()
            .withPhase("Running")
            .withPodIP(ip)
            .addNewCondition()
            .withType("Ready")
            .withStatus(ready ? "True" : "False")
            .endCondition()
            .endStatus()
            .build();
    client.pods().inNamespace(NS).resource(pod).createOr(r -> r.update());
  }

  @Test
  void endpoints_areTheReadyPodsTheSelectorPicks() {
    pool(List.of(8000));
    pod("vllm-0", "10.0.0.1", "vllm", true, Map.of());
    pod("vllm-1", "10.0.0.2", "vllm", false, Map.of());
    pod("other-0", "10.0.0.3", "other", true, Map.of());
    try (InferencePoolCandidates c =
        InferencePoolCandidates.start(client, NS, "vllm", false, new SimpleMeterRegistry())) {
      assertThat(Await.until(() -> c.endpoints().size() == 1)).isTrue();
      assertThat(c.endpoints()).containsExactly(Endpoint.of("vllm-0", "10.0.0.1", 8000));
      assertThat(Await.until(() -> c.problem().isEmpty()))
          .as("ready once the pool and its pods are watched")
          .isTrue();

      pod("vllm-1", "10.0.0.2", "vllm", true, Map.of());

      assertThat(Await.until(() -> c.endpoints().size() == 2))
          .as("a pod that turns ready becomes a candidate")
          .isTrue();
    }
  }

  @Test
  void endpoints_severalTargetPorts_areRanksOfTheirPod() {
    pool(List.of(8000, 8001));
    pod("vllm-0", "10.0.0.1", "vllm", true, Map.of());
    pod("vllm-1", "10.0.0.2", "vllm", true, Map.of(InferencePoolCandidates.ACTIVE_PORTS, "8001"));
    try (InferencePoolCandidates c =
        InferencePoolCandidates.start(client, NS, "vllm", true, new SimpleMeterRegistry())) {
      assertThat(Await.until(() -> c.endpoints().size() == 3)).isTrue();
      assertThat(c.endpoints())
          .containsExactly(
              Endpoint.ranked("10.0.0.1", 0, "10.0.0.1", 8000),
              Endpoint.ranked("10.0.0.1", 1, "10.0.0.1", 8001),
              Endpoint.ranked("10.0.0.2", 1, "10.0.0.2", 8001));
    }
  }

  @Test
  void problem_namesAMissingPool() {
    try (InferencePoolCandidates c =
        InferencePoolCandidates.start(client, NS, "absent", false, new SimpleMeterRegistry())) {
      assertThat(
              Await.until(
                  () -> c.problem().isPresent() && c.problem().get().contains("does not exist")))
          .isTrue();
      assertThat(c.endpoints()).isEmpty();
    }
  }

  @Test
  void podNamedByIp_isPickedByTheIndexsEntriesOfThatName_overRealSockets(
      @Fresh RedisStandalone redis) throws Exception {
    pool(List.of(8000));
    pod("vllm-0", "10.0.0.1", "vllm", true, Map.of());
    pod("vllm-1", "10.0.0.2", "vllm", true, Map.of());
    String model = ExtProcProtocolTest.MODEL;
    int[] tokens = IntStream.range(0, 256).map(i -> (i * 7919 + 5) % 50000).toArray();
    String uri = redis.uri().toURI().toString();
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try (RedisConnector connector = RedisConnector.connect(uri);
        PrefixIndex index = PrefixIndex.builder().indexName("epp").redis(connector).build();
        KvRouter router =
            KvRouter.builder()
                .redisUri(uri)
                .indexName("epp")
                .model(model, ModelKeys.engine("sha256_cbor", "0", 16))
                .lookupBudget(Duration.ofMillis(500))
                .meterRegistry(registry)
                .build()) {
      // The ingesters, with --kubernetes-pod-name ip, name the pods by their IPs: 10.0.0.2 holds
      // the prompt, 10.0.0.1 is live with another block.
      List<Long> held = new ArrayList<>();
      for (long k : router.blockKeys(model, null, null, tokens)) {
        held.add(k);
      }
      Map<String, List<Long>> blocks = Map.of("10.0.0.1", List.of(7L), "10.0.0.2", held);
      for (Map.Entry<String, List<Long>> e : blocks.entrySet()) {
        StreamId stream = StreamId.of(model, e.getKey());
        Lease lease = index.acquireLease(stream, "test", Duration.ofMinutes(1)).orElseThrow();
        index.apply(
            stream,
            KeyMode.ENGINE,
            1,
            lease,
            KvEventBatch.of(0, List.of(BlockStored.of(e.getValue(), null, List.of(), 16)), 0));
      }
      InferencePoolCandidates candidates =
          InferencePoolCandidates.start(client, NS, "vllm", true, registry);
      assertThat(Await.until(() -> candidates.endpoints().size() == 2)).isTrue();
      try (EppServer server =
              EppServer.start(ExtProcProtocolTest.config().build(), router, candidates, registry);
          Proxy proxy = new Proxy(server.address(), null);
          ProxyStream s = proxy.open()) {
        byte[] body =
            ("{\"model\":\""
                    + model
                    + "\",\"prompt\":"
                    + java.util.Arrays.toString(tokens).replace(" ", "")
                    + "}")
                .getBytes(java.nio.charset.StandardCharsets.UTF_8);
        Proxy.Routed routed =
            proxy.request(
                s,
                Proxy.Mode.of(BodySendMode.FULL_DUPLEX_STREAMED),
                new Proxy.HttpRequest("/v1/completions", Map.of(), body, null),
                1);

        assertThat(routed.endpoints().get(0))
            .as("the pod the index names 10.0.0.2, at its IP and the pool's target port")
            .isEqualTo("10.0.0.2:8000");
        String picked = "kvindex_epp_picks_total{reason=\"longest_prefix\"} 1.0";
        Await.until(() -> registry.scrape().contains(picked)); // counted once the answer is out
        assertThat(registry.scrape()).as("picked for its prefix, not by chance").contains(picked);
      }
    }
  }
}
