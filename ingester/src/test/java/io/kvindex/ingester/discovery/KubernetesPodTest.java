package io.kvindex.ingester.discovery;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.kvindex.index.KeyMode;
import io.kvindex.ingester.discovery.KubernetesOptions.PodName;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** How a pod object's status and annotations become a stream's spec, or a problem. */
class KubernetesPodTest {

  private static Map<String, String> model() {
    Map<String, String> notes = new HashMap<>();
    notes.put(KubernetesPod.MODEL, "meta-llama/Llama-3.1-8B");
    return notes;
  }

  /** A running pod of two containers (vllm first), ready or not. */
  private static PodBuilder pod(Map<String, String> notes, String ip, boolean ready) {
    return new PodBuilder()
        .withNewMetadata()
        .withName("vllm-0")
        .withNamespace("ns")
        .withUid("uid-1")
        .addToAnnotations(notes)
        .endMetadata()
        .withNewSpec()
        .addNewContainer()
        .withName("vllm")
        .endContainer()
        .addNewContainer()
        .withName("sidecar")
        .endContainer()
        .endSpec()
        .withNewStatus()
        .withPhase("Running")
        .withPodIP(ip)
        .addNewCondition()
        .withType("Ready")
        .withStatus(ready ? "True" : "False")
        .endCondition()
        .addNewContainerStatus()
        .withName("vllm")
        .withRestartCount(2)
        .withContainerID("containerd://engine")
        .endContainerStatus()
        .addNewContainerStatus()
        .withName("sidecar")
        .withRestartCount(7)
        .withContainerID("containerd://side")
        .endContainerStatus()
        .endStatus();
  }

  private static KubernetesPod read(Pod pod) {
    return KubernetesPod.read(pod, PodName.NAME);
  }

  @Test
  void read_defaultsAreVllmsOwn() {
    KubernetesPod p = read(pod(model(), "10.0.0.7", true).build());
    assertThat(p.key()).isEqualTo("ns/vllm-0");
    assertThat(p.ready()).isTrue();
    assertThat(p.problem()).isNull();
    assertThat(p.spec())
        .isEqualTo(
            new PodSpec(
                "vllm-0",
                "meta-llama/Llama-3.1-8B",
                "tcp://10.0.0.7:5557",
                false,
                null,
                "http://10.0.0.7:8000/metrics",
                List.of(0),
                KeyMode.ENGINE,
                "",
                "uid-1/2/containerd://engine"));
  }

  @Test
  void read_everyAnnotation() {
    Map<String, String> notes = model();
    notes.put(KubernetesPod.KV_EVENTS_PORT, "6000");
    notes.put(KubernetesPod.REPLAY_PORT, "6100");
    notes.put(KubernetesPod.METRICS_PORT, "9000");
    notes.put(KubernetesPod.DP_RANKS, "0;1");
    notes.put(KubernetesPod.KEY_MODE, "token");
    notes.put(KubernetesPod.TOPIC, "kv@vllm-0");
    notes.put(KubernetesPod.CONTAINER, "sidecar");
    PodSpec s = read(pod(notes, "10.0.0.7", true).build()).spec();
    assertThat(s.publisherEndpoint(1)).isEqualTo("tcp://10.0.0.7:6001");
    assertThat(s.replayEndpoint(1)).isEqualTo("tcp://10.0.0.7:6101");
    assertThat(s.metricsUrl()).isEqualTo("http://10.0.0.7:9000/metrics");
    assertThat(s.dpRanks()).containsExactly(0, 1);
    assertThat(s.keyMode()).isEqualTo(KeyMode.TOKEN);
    assertThat(s.topic()).isEqualTo("kv@vllm-0");
    assertThat(s.incarnation()).isEqualTo("uid-1/7/containerd://side");
  }

  @Test
  void read_namedByIp_ipv6InBrackets() {
    KubernetesPod p = KubernetesPod.read(pod(model(), "fd00::7", true).build(), PodName.IP);
    assertThat(p.spec().name()).isEqualTo("fd00::7");
    assertThat(p.spec().publisherEndpoint()).isEqualTo("tcp://[fd00::7]:5557");
    assertThat(p.spec().metricsUrl()).isEqualTo("http://[fd00::7]:8000/metrics");
  }

  @Test
  void read_incarnationFollowsTheEngineContainerOnly() {
    String before = read(pod(model(), "10.0.0.7", true).build()).spec().incarnation();
    Pod sidecarRestarted = pod(model(), "10.0.0.7", true).build();
    sidecarRestarted.getStatus().getContainerStatuses().get(1).setRestartCount(8);
    Pod engineRestarted = pod(model(), "10.0.0.7", true).build();
    engineRestarted.getStatus().getContainerStatuses().get(0).setRestartCount(3);
    Pod engineReplaced = pod(model(), "10.0.0.7", true).build();
    engineReplaced.getStatus().getContainerStatuses().get(0).setContainerID("containerd://new");
    Pod newUid = pod(model(), "10.0.0.7", true).build();
    newUid.getMetadata().setUid("uid-2");

    assertThat(read(sidecarRestarted).spec().incarnation()).isEqualTo(before);
    assertThat(read(engineRestarted).spec().incarnation()).isNotEqualTo(before);
    assertThat(read(engineReplaced).spec().incarnation()).isNotEqualTo(before);
    assertThat(read(newUid).spec().incarnation()).isNotEqualTo(before);
  }

  @Test
  void read_readyOnlyWhenRunningReadyWithAnIp() {
    assertThat(read(pod(model(), "10.0.0.7", false).build()).ready()).isFalse();
    Pod pending = pod(model(), "10.0.0.7", true).build();
    pending.getStatus().setPhase("Pending");
    assertThat(read(pending).ready()).isFalse();
    KubernetesPod noIp = read(pod(model(), null, true).build());
    assertThat(noIp.ready()).isFalse();
    assertThat(noIp.spec()).as("no endpoint without an IP").isNull();
    assertThat(noIp.problem()).isNull();
    Pod terminating = pod(model(), "10.0.0.7", true).build();
    terminating.getMetadata().setDeletionTimestamp("2026-01-01T00:00:00Z");
    assertThat(read(terminating).ready()).isFalse();
    assertThat(read(terminating).spec()).as("a terminating pod is gone already").isNull();
  }

  @Test
  void read_noModel_isAProblemThatSaysWhatToDo() {
    KubernetesPod p = read(pod(new HashMap<>(), "10.0.0.7", true).build());
    assertThat(p.spec()).isNull();
    assertThat(p.problem().reason()).isEqualTo("no_model");
    assertThat(p.problem().message())
        .contains("ns/vllm-0")
        .contains("kvindex.io/model")
        .contains("annotate");
  }

  @Test
  void read_badAnnotations_areProblemsThatSayWhatToDo() {
    assertThat(problem(KubernetesPod.KV_EVENTS_PORT, "zmq")).contains("give a port number");
    assertThat(problem(KubernetesPod.REPLAY_PORT, "70000")).contains("from 1 to 65535");
    assertThat(problem(KubernetesPod.DP_RANKS, "0;one")).contains("like 0;1");
    assertThat(problem(KubernetesPod.DP_RANKS, "0;1;0")).contains("twice rank 0");
    assertThat(problem(KubernetesPod.DP_RANKS, "70000")).contains("from 0 to 65535");
    String thousands =
        java.util.stream.IntStream.range(0, 5000)
            .mapToObj(Integer::toString)
            .collect(java.util.stream.Collectors.joining(";"));
    assertThat(problem(KubernetesPod.DP_RANKS, thousands))
        .contains("more than " + PodSpec.MAX_DP_RANKS + " ranks");
    assertThat(problem(KubernetesPod.KEY_MODE, "sha")).contains("keyMode must be one of");
    assertThat(problem(KubernetesPod.CONTAINER, "engine")).contains("[vllm, sidecar]");
  }

  @Test
  void read_theDeployExamplesPodIsTheStreamItsFlagsOpen() throws IOException {
    Path dir = Path.of("").toAbsolutePath();
    while (!Files.isDirectory(dir.resolve("deploy/kubernetes"))) {
      dir = dir.getParent();
    }
    Deployment example =
        Serialization.unmarshal(
            Files.readString(dir.resolve("deploy/kubernetes/examples/vllm.yaml")),
            Deployment.class);
    Pod pod =
        new PodBuilder()
            .withMetadata(example.getSpec().getTemplate().getMetadata())
            .editMetadata()
            .withName("vllm-abc12")
            .withNamespace(example.getMetadata().getNamespace())
            .withUid("uid-9")
            .endMetadata()
            .withSpec(example.getSpec().getTemplate().getSpec())
            .withNewStatus()
            .withPhase("Running")
            .withPodIP("10.3.0.9")
            .addNewCondition()
            .withType("Ready")
            .withStatus("True")
            .endCondition()
            .endStatus()
            .build();
    KubernetesPod p = read(pod);
    assertThat(p.problem()).isNull();
    assertThat(p.ready()).isTrue();
    assertThat(p.spec().model()).isEqualTo("Qwen/Qwen3-0.6B");
    assertThat(p.spec().publisherEndpoint()).isEqualTo("tcp://10.3.0.9:5557");
    assertThat(p.spec().replayEndpoint()).isEqualTo("tcp://10.3.0.9:5600");
    assertThat(p.spec().metricsUrl()).isEqualTo("http://10.3.0.9:8000/metrics");
    assertThat(p.spec().keyMode()).isEqualTo(KeyMode.ENGINE);
  }

  private static String problem(String key, String value) {
    Map<String, String> notes = model();
    notes.put(key, value);
    KubernetesPod p = read(pod(notes, "10.0.0.7", true).build());
    assertThat(p.spec()).isNull();
    assertThat(p.problem().reason()).isEqualTo("bad_annotation");
    assertThat(p.problem().message()).contains("ns/vllm-0").contains(key);
    return p.problem().message();
  }
}
