package io.kvindex.epp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code kvindex epp}'s settings: what they resolve to, and what they refuse. */
class EppCommandTest {

  private static EppCommand.Service service(Map<String, String> env, String... args)
      throws Exception {
    EppCommand command = new EppCommand();
    new CommandLine(command).parseArgs(args);
    return command.service(env, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
  }

  @Test
  void service_readsFlagsAndEnvironment() throws Exception {
    EppCommand.Service s =
        service(
            Map.of("KVINDEX_FALLBACKS", "1", "KVINDEX_LORA_ADAPTER", "sql=org/m"),
            "--endpoint",
            "pod-0=10.0.0.5:8000",
            "--endpoint",
            "pod-1=10.0.0.6:8000",
            "--model",
            "org/m=engine:sha256:16",
            "--sheddable-objective",
            "batch");

    assertThat(s.candidates().fixed())
        .containsExactly(
            Endpoint.of("pod-0", "10.0.0.5", 8000), Endpoint.of("pod-1", "10.0.0.6", 8000));
    assertThat(s.config().fallbacks()).isEqualTo(1);
    assertThat(s.config().sheddableObjectives()).containsExactly("batch");
    assertThat(s.config().models().target("sql")).isEqualTo(new ModelMap.Target("org/m", "sql"));
    assertThat(s.config().models().target("org/m")).isEqualTo(new ModelMap.Target("org/m", null));
    assertThat(s.config().models().target("other")).as("no default keys").isNull();
    assertThat(s.config().listen().getAddress().isLoopbackAddress()).isTrue();
  }

  @Test
  void service_beyondLoopbackWithoutAToken_isRefused() {
    assertThatThrownBy(() -> service(Map.of(), "--listen", "0.0.0.0:9002", "--pool-name", "vllm"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not a loopback address")
        .hasMessageContaining("--auth-token-file")
        .hasMessageContaining("--insecure-no-auth");
  }

  @Test
  void service_beyondLoopbackInsecure_isAllowedAsAsked() throws Exception {
    EppCommand.Service s =
        service(
            Map.of(),
            "--listen",
            "0.0.0.0:9002",
            "--pool-name",
            "vllm",
            "--insecure-no-auth",
            "true");
    assertThat(s.candidates().pool()).isEqualTo("vllm");
    assertThat(s.config().authToken()).isNull();
  }

  @Test
  void service_candidatesBothOrNeither_areRefused() {
    for (List<String> args :
        List.of(
            List.<String>of(), List.of("--pool-name", "vllm", "--endpoint", "p=10.0.0.1:8000"))) {
      assertThatThrownBy(() -> service(Map.of(), args.toArray(String[]::new)))
          .as("%s", args)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("either as an InferencePool");
    }
  }
}
