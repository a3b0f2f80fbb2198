package io.kvindex.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class MainTest {

  @Test
  void execute_help_listsCommandsOnStdout() {
    CliRun run = CliRun.of("--help");
    assertThat(run.exitCode()).isZero();
    assertThat(run.out()).contains("kvindex", "hash", "help");
    assertThat(run.err()).isEmpty();
  }

  @Test
  void execute_version_printsBuildVersion() {
    CliRun run = CliRun.of("--version");
    assertThat(run.exitCode()).isZero();
    assertThat(run.out()).startsWith("kvindex 0.").doesNotContain("${");
  }

  @Test
  void execute_noCommand_usageOnStderrExit2() {
    CliRun run = CliRun.of();
    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.out()).isEmpty();
    assertThat(run.err()).startsWith("kvindex: missing command").contains("Usage:");
  }

  @Test
  void execute_unknownCommand_oneLineErrorExit2() {
    CliRun run = CliRun.of("frobnicate");
    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.out()).isEmpty();
    assertThat(run.err()).startsWith("kvindex: ").contains("frobnicate").hasLineCount(1);
  }

  @Test
  void execute_helpSubcommand_showsSubcommandUsage() {
    CliRun run = CliRun.of("help", "hash");
    assertThat(run.exitCode()).isZero();
    assertThat(run.out()).contains("--tokens", "--algo", "sha256_cbor_64bit", "token_keys");
  }
}
