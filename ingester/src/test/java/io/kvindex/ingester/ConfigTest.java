package io.kvindex.ingester;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.index.KeyMode;
import io.kvindex.ingester.discovery.PodDiscovery;
import io.kvindex.ingester.discovery.PodSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class ConfigTest {
  @TempDir Path dir;

  private static IngesterCommand parse(String... args) {
    IngesterCommand c = new IngesterCommand();
    new CommandLine(c).parseArgs(args);
    return c;
  }

  @Test
  void config_defaults() throws Exception {
    IngesterConfig c = parse().config(Map.of());
    assertThat(c.redisUri()).isEqualTo("redis://127.0.0.1:6379");
    assertThat(c.leaseTtl()).isEqualTo(Duration.ofSeconds(6));
    assertThat(c.coordinationInterval()).isEqualTo(Duration.ofSeconds(2));
    assertThat(c.httpPort()).isEqualTo(9400);
    assertThat(c.httpReadTimeout()).isEqualTo(Duration.ofSeconds(10));
    assertThat(c.httpIdleTimeout()).isEqualTo(Duration.ofSeconds(30));
    assertThat(c.pods()).isEmpty();
  }

  @Test
  void config_httpTimeoutsAreWholeSeconds() throws Exception {
    IngesterConfig c =
        parse("--http-read-timeout", "3s").config(Map.of("KVINDEX_HTTP_IDLE_TIMEOUT", "PT1M"));
    assertThat(c.httpReadTimeout()).isEqualTo(Duration.ofSeconds(3));
    assertThat(c.httpIdleTimeout()).isEqualTo(Duration.ofMinutes(1));
    assertThatThrownBy(() -> parse("--http-read-timeout", "1500ms").config(Map.of()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("http-read-timeout (--http-read-timeout, KVINDEX_HTTP_READ_TIMEOUT)")
        .hasMessageContaining("whole number of seconds");
  }

  @Test
  void config_flagBeatsEnvironmentBeatsFile() throws Exception {
    Path file = dir.resolve("ingester.yaml");
    Files.writeString(
        file,
        "redis-uri: redis://file:1\nlease-ttl: 3s\nhttp-port: 1000\npods:\n"
            + "  - name=a,model=m,endpoint=tcp://h:5557,replay=tcp://h:6557,ranks=0;1\n");
    IngesterConfig c =
        parse("--config", file.toString(), "--redis-uri", "rediss://user:pw@flag:2")
            .config(Map.of("KVINDEX_REDIS_URI", "redis://env:3", "KVINDEX_LEASE_TTL", "4500ms"));
    assertThat(c.redisUri()).isEqualTo("rediss://user:pw@flag:2");
    assertThat(c.leaseTtl()).isEqualTo(Duration.ofMillis(4500));
    assertThat(c.httpPort()).isEqualTo(1000);
    assertThat(c.pods())
        .singleElement()
        .satisfies(
            p -> {
              assertThat(p.dpRanks()).containsExactly(0, 1);
              assertThat(p.publisherEndpoint(1)).isEqualTo("tcp://h:5558");
              assertThat(p.replayEndpoint(1)).isEqualTo("tcp://h:6558");
            });
  }

  @Test
  void config_toStringNeverShowsPassword() throws Exception {
    IngesterConfig c = parse("--redis-uri", "redis-sentinel://kv:Pa55/w0rd@h:1#m").config(Map.of());

    assertThat(c.toString()).doesNotContain("Pa55", "w0rd");
  }

  @Test
  void config_repeatedPodFlags() throws Exception {
    IngesterConfig c =
        parse(
                "--pod", "name=a,model=m,endpoint=tcp://h:1",
                "--pod", "name=b,model=m,endpoint=tcp://0.0.0.0:2,bind=true,key-mode=token")
            .config(Map.of());
    assertThat(c.pods()).extracting(PodSpec::name).containsExactly("a", "b");
    assertThat(c.pods().get(1).bind()).isTrue();
    assertThat(c.pods().get(1).keyMode()).isEqualTo(KeyMode.TOKEN);
  }

  @Test
  void config_badValuesNameTheSetting() {
    assertThatThrownBy(() -> parse("--lease-ttl", "soon").config(Map.of()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("lease-ttl")
        .hasMessageContaining("KVINDEX_LEASE_TTL");
    assertThatThrownBy(() -> parse("--pod", "name=a,model=m").config(Map.of()))
        .hasMessageContaining("endpoint=");
    assertThatThrownBy(
            () -> parse("--pod", "name=a,model=m,endpoint=ipc://x,ranks=0;1").config(Map.of()))
        .hasMessageContaining("cannot carry data-parallel rank");
  }

  @Test
  void config_unknownFileKeyIsRefused() throws Exception {
    Path file = dir.resolve("bad.yaml");
    Files.writeString(file, "redis-url: redis://x:1\n");
    assertThatThrownBy(() -> parse("--config", file.toString()).config(Map.of()))
        .hasMessageContaining("unknown setting 'redis-url'");
  }

  @Test
  void call_badInputIsOneLineWithExitCodes() {
    java.io.StringWriter err = new java.io.StringWriter();
    CommandLine cl = new CommandLine(new IngesterCommand());
    cl.setErr(new java.io.PrintWriter(err));
    assertThat(cl.execute("--lease-ttl", "soon")).isEqualTo(2);
    assertThat(err.toString()).contains("lease-ttl").contains("250ms, 6s");

    err.getBuffer().setLength(0);
    cl = new CommandLine(new IngesterCommand());
    cl.setErr(new java.io.PrintWriter(err));
    int port;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      port = s.getLocalPort(); // closed again: nothing listens there
    } catch (java.io.IOException e) {
      throw new AssertionError(e);
    }
    assertThat(
            cl.execute(
                "--redis-uri",
                "redis://127.0.0.1:" + port,
                "--http-port",
                "-1",
                "--redis-timeout",
                "300ms"))
        .isEqualTo(1);
    assertThat(err.toString()).startsWith("kvindex ingester: cannot start: ").contains("connect");
  }

  @Test
  void settings_everyOneHasAFlag() {
    CommandLine cl = new CommandLine(new IngesterCommand());
    for (IngesterSetting s : IngesterSetting.values()) {
      String flag = s == IngesterSetting.PODS ? "--pod" : "--" + s.setting.key();
      assertThat(cl.getCommandSpec().findOption(flag)).as(flag).isNotNull();
    }
  }

  @Test
  void config_builderStartsFromTheDeclaredDefaults() {
    IngesterConfig c = IngesterConfig.builder().build();
    assertThat(c.idleCatchUp()).isEqualTo(Duration.ofSeconds(10));
    assertThat(c.departedRetention()).isEqualTo(Duration.ofHours(1));
    assertThat(c.maxPendingBatches()).isEqualTo(100_000);
    assertThat(c.discoveryFile()).isNull();
  }

  @Test
  void fileDiscovery_reloadsOnChangeAndKeepsTheLastGoodList() throws Exception {
    Path file = dir.resolve("pods.yaml");
    PodDiscovery d = PodDiscovery.file(file);
    assertThat(d.pods()).isEmpty();
    Files.writeString(
        file,
        "pods:\n  - name: a\n    model: m\n    endpoint: tcp://h:1\n    replayEndpoint: tcp://h:2\n");
    assertThat(d.pods()).extracting(PodSpec::name).containsExactly("a");
    Files.writeString(
        file,
        "{\"pods\": [{\"name\": \"a\", \"model\": \"m\", \"endpoint\": \"tcp://h:1\"},"
            + " {\"name\": \"b\", \"model\": \"m\", \"endpoint\": \"tcp://h:3\", \"dpRanks\": [0, 1],"
            + " \"keyMode\": \"token\", \"metricsUrl\": \"http://h:8000/metrics\"}]}");
    assertThat(d.pods()).extracting(PodSpec::name).containsExactly("a", "b");
    Files.writeString(file, "pods: [ {name: c, model: m, endpoint: tcp://h:4, colour: blue} ]\n");
    assertThat(d.pods()).extracting(PodSpec::name).containsExactly("a", "b");
    Files.delete(file);
    assertThat(d.pods()).isEmpty();
  }

  @Test
  void podSpec_dataParallelRanksAreBounded() {
    String many =
        java.util.stream.IntStream.range(0, PodSpec.MAX_DP_RANKS + 1)
            .mapToObj(Integer::toString)
            .collect(java.util.stream.Collectors.joining(";"));
    assertThatThrownBy(
            () ->
                parse("--pod", "name=a,model=m,endpoint=tcp://h:1,ranks=" + many).config(Map.of()))
        .hasMessageContaining("over the limit of " + PodSpec.MAX_DP_RANKS);
    assertThatThrownBy(
            () -> parse("--pod", "name=a,model=m,endpoint=tcp://h:1,ranks=0;1;1").config(Map.of()))
        .hasMessageContaining("names a rank twice");
    assertThatThrownBy(
            () ->
                parse("--pod", "name=a,model=m,endpoint=tcp://h:65530,ranks=0;9").config(Map.of()))
        .hasMessageContaining("port + rank passes 65535");
    assertThatThrownBy(
            () ->
                parse("--pod", "name=a,model=m,endpoint=tcp://h:1,replay=tcp://h:65535,ranks=0;1")
                    .config(Map.of()))
        .as("the replay endpoint carries the ranks too")
        .hasMessageContaining("port + rank passes 65535");
  }

  @Test
  void podSpec_rejectsUnknownKeyMode() {
    assertThatThrownBy(() -> PodSpec.keyMode("sha")).hasMessageContaining("keyMode must be one of");
    assertThatThrownBy(
            () -> parse("--pod", "name=a,model=m,endpoint=tcp://h:1,key-mode=sha").config(Map.of()))
        .hasMessageContaining("keyMode must be one of");
  }
}
