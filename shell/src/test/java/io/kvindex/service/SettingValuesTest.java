package io.kvindex.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;

class SettingValuesTest {
  private static final Setting TTL = Setting.of("lease-ttl", "6s", "DURATION", "Lease lifetime");
  private static final Setting NAME =
      Setting.of("index-name", "default", "NAME", "Index name").flags("--index-name", "--index");
  private static final Setting PODS =
      Setting.optional("pods", "none", "SPEC", "Pods").flags("--pod").repeatable("\\s+");
  private static final List<Setting> ALL = List.of(TTL, NAME, PODS);

  @TempDir Path dir;

  @Command(name = "test")
  static final class Cmd {}

  private static CommandSpec parse(String... args) {
    CommandSpec spec = SettingOptions.addTo(CommandSpec.forAnnotatedObject(new Cmd()), ALL);
    new CommandLine(spec).parseArgs(args);
    return spec;
  }

  @Test
  void values_flagBeatsEnvironmentBeatsFileBeatsDefault() throws Exception {
    Path file = dir.resolve("s.yaml");
    Files.writeString(file, "lease-ttl: 3s\nindex-name: from-file\npods: [a, b]\n");
    SettingValues v =
        SettingOptions.values(
            parse("--config", file.toString(), "--index", "from-flag"),
            ALL,
            Map.of("KVINDEX_LEASE_TTL", "4s", "KVINDEX_INDEX_NAME", "from-env"));
    assertThat(v.value(NAME)).isEqualTo("from-flag");
    assertThat(v.source(NAME)).isEqualTo(SettingValues.Source.FLAG);
    assertThat(v.value(TTL)).isEqualTo("4s");
    assertThat(v.source(TTL)).isEqualTo(SettingValues.Source.ENVIRONMENT);
    assertThat(v.values(PODS)).containsExactly("a", "b");
    assertThat(v.source(PODS)).isEqualTo(SettingValues.Source.FILE);
    SettingValues defaults = SettingOptions.values(parse(), ALL, Map.of());
    assertThat(defaults.value(TTL)).isEqualTo("6s");
    assertThat(defaults.values(PODS)).isEmpty();
    assertThat(defaults.source(TTL)).isEqualTo(SettingValues.Source.DEFAULT);
  }

  @Test
  void values_repeatableFromFlagsAndSplitEnvironment() throws Exception {
    assertThat(SettingOptions.values(parse("--pod", "a", "--pod", "b"), ALL, Map.of()).values(PODS))
        .containsExactly("a", "b");
    assertThat(
            SettingOptions.values(parse(), ALL, Map.of("KVINDEX_PODS", " a  b\nc ")).values(PODS))
        .containsExactly("a", "b", "c");
  }

  @Test
  void values_unknownFileKeyIsRefused() throws Exception {
    Path file = dir.resolve("bad.yaml");
    Files.writeString(file, "lease_ttl: 3s\n");
    assertThatThrownBy(
            () -> SettingOptions.values(parse("--config", file.toString()), ALL, Map.of()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown setting 'lease_ttl'");
  }

  @Test
  void apply_namesTheSettingAndItsSource() throws Exception {
    SettingValues v = SettingOptions.values(parse("--lease-ttl", "soon"), ALL, Map.of());
    assertThatThrownBy(() -> v.apply(TTL, Durations::parse))
        .hasMessageContaining("lease-ttl (--lease-ttl, KVINDEX_LEASE_TTL) from the flag");
  }

  @Test
  void help_showsDefaultAndEnvironment() {
    String usage = new CommandLine(parse()).getUsageMessage();
    assertThat(usage).contains("--lease-ttl=DURATION").contains("default: 6s; KVINDEX_LEASE_TTL");
  }
}
