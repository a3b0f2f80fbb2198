package io.kvindex.ingester;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.client.Config;
import io.kvindex.ingester.discovery.KubernetesApi;
import io.kvindex.ingester.discovery.KubernetesOptions.PodName;
import io.kvindex.ingester.discovery.PodDiscovery;
import io.kvindex.ingester.discovery.PodSpec;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** The Kubernetes discovery settings, from flags, environment and file, and their wiring. */
class KubernetesConfigTest {
  @TempDir Path dir;

  private static IngesterConfig config(Map<String, String> env, String... args) throws Exception {
    IngesterCommand c = new IngesterCommand();
    new CommandLine(c).parseArgs(args);
    return c.config(env);
  }

  @Test
  void config_defaultsAreStaticDiscovery() throws Exception {
    IngesterConfig c = config(Map.of());
    assertThat(c.discovery()).isEqualTo(IngesterConfig.Discovery.STATIC);
    assertThat(c.kubernetes().namespaces()).as("the ingester's own").isEmpty();
    assertThat(c.kubernetes().labelSelector()).isEqualTo("kvindex.io/enabled=true");
    assertThat(c.kubernetes().notReadyAfter()).isEqualTo(Duration.ofSeconds(30));
    assertThat(c.kubernetes().podName()).isEqualTo(PodName.NAME);
    assertThat(IngesterConfig.builder().build().kubernetes()).isEqualTo(c.kubernetes());
  }

  @Test
  void config_kubernetesFromFlagsEnvironmentAndFile() throws Exception {
    Path file = dir.resolve("ingester.yaml");
    Files.writeString(
        file, "kubernetes-not-ready-after: 1m\nkubernetes-label-selector: app=vllm\n");
    IngesterConfig c =
        config(
            Map.of("KVINDEX_KUBERNETES_POD_NAME", "IP", "KVINDEX_DISCOVERY", "static"),
            "--config",
            file.toString(),
            "--discovery",
            "kubernetes",
            "--kubernetes-namespaces",
            "serving, serving-canary,,serving");
    assertThat(c.discovery()).isEqualTo(IngesterConfig.Discovery.KUBERNETES);
    assertThat(c.kubernetes().namespaces()).containsExactly("serving", "serving-canary");
    assertThat(c.kubernetes().labelSelector()).isEqualTo("app=vllm");
    assertThat(c.kubernetes().notReadyAfter()).isEqualTo(Duration.ofMinutes(1));
    assertThat(c.kubernetes().podName()).isEqualTo(PodName.IP);
  }

  @Test
  void config_badKubernetesValuesNameTheSettingAndWhatIsAccepted() {
    assertThatThrownBy(() -> config(Map.of(), "--discovery", "k8s"))
        .hasMessageContaining("KVINDEX_DISCOVERY")
        .hasMessageContaining("'static'")
        .hasMessageContaining("'kubernetes'");
    assertThatThrownBy(() -> config(Map.of(), "--kubernetes-namespaces", "Serving"))
        .hasMessageContaining("kubernetes-namespaces")
        .hasMessageContaining("not a Kubernetes namespace name");
    assertThatThrownBy(() -> config(Map.of(), "--kubernetes-pod-name", "uid"))
        .hasMessageContaining("'name'")
        .hasMessageContaining("'ip'");
    assertThatThrownBy(() -> config(Map.of(), "--kubernetes-not-ready-after", "0s"))
        .hasMessageContaining("notReadyAfter must be positive");
    assertThatThrownBy(() -> config(Map.of(), "--kubernetes-label-selector", " "))
        .hasMessageContaining("labelSelector");
  }

  @Test
  void discovery_kubernetesJoinsTheStaticPods() throws Exception {
    try (KubernetesApi api = KubernetesApi.start()) {
      api.create("vllm-0", Map.of("kvindex.io/model", "m"));
      api.ready("vllm-0", "10.2.0.1");
      System.setProperty(
          Config.KUBERNETES_MASTER_SYSTEM_PROPERTY, api.client().getMasterUrl().toString());
      System.setProperty(Config.KUBERNETES_NAMESPACE_SYSTEM_PROPERTY, KubernetesApi.NAMESPACE);
      System.setProperty(Config.KUBERNETES_AUTH_TRYKUBECONFIG_SYSTEM_PROPERTY, "false");
      System.setProperty(Config.KUBERNETES_AUTH_TRYSERVICEACCOUNT_SYSTEM_PROPERTY, "false");
      IngesterConfig config =
          config(
              Map.of(),
              "--discovery",
              "kubernetes",
              "--pod",
              "name=static-0,model=m,endpoint=tcp://h:1");
      try (PodDiscovery d = Ingester.discovery(config, new SimpleMeterRegistry())) {
        Await.until(
            Duration.ofSeconds(20),
            "the static pod and the Kubernetes one",
            () ->
                d.pods().stream()
                    .map(PodSpec::name)
                    .toList()
                    .equals(List.of("static-0", "vllm-0")));
        assertThat(d.problem()).isEmpty();
      }
    } finally {
      for (String p :
          List.of(
              Config.KUBERNETES_MASTER_SYSTEM_PROPERTY,
              Config.KUBERNETES_NAMESPACE_SYSTEM_PROPERTY,
              Config.KUBERNETES_AUTH_TRYKUBECONFIG_SYSTEM_PROPERTY,
              Config.KUBERNETES_AUTH_TRYSERVICEACCOUNT_SYSTEM_PROPERTY)) {
        System.clearProperty(p);
      }
    }
  }
}
