package io.kvindex.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvindex.hash.GoldenVectors;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the real {@code scripts/kvindex} launcher. The build runs this class in the integration-test
 * phase, after package has made {@code cli/target/kvindex-cli.jar} and {@code cli/target/lib/}; the
 * launcher is told not to rebuild (that would start Maven inside Maven).
 */
class HashLauncherIT {
  @TempDir Path dir;

  private record Result(int exitCode, String out, String err) {}

  private static Path repositoryRoot() {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null && !Files.isRegularFile(dir.resolve("scripts/kvindex"))) {
      dir = dir.getParent();
    }
    assumeTrue(dir != null, "scripts/kvindex not found above the working directory");
    return dir;
  }

  private Result launch(String... args) throws IOException, InterruptedException {
    // Set only by the build's launcher-tests execution: in the test phase (for example with
    // -Dtest=...) the jar may still be an older build.
    assumeTrue(
        Boolean.getBoolean("kvindex.launcherTests"),
        "runs in the integration-test phase, after package");
    Path root = repositoryRoot();
    assumeTrue(
        Files.isRegularFile(root.resolve("cli/target/kvindex-cli.jar")),
        "cli/target/kvindex-cli.jar is built by the package phase");
    List<String> command = new ArrayList<>(List.of("bash", "scripts/kvindex"));
    command.addAll(List.of(args));
    Path out = dir.resolve("stdout");
    Path err = dir.resolve("stderr");
    ProcessBuilder builder =
        new ProcessBuilder(command).directory(root.toFile()).redirectOutput(out.toFile());
    builder.redirectError(err.toFile()).environment().put("KVINDEX_NO_BUILD", "1");
    Process process = builder.start();
    if (!process.waitFor(2, TimeUnit.MINUTES)) {
      process.destroyForcibly();
      throw new AssertionError("scripts/kvindex did not finish within 2 minutes");
    }
    return new Result(
        process.exitValue(),
        Files.readString(out, StandardCharsets.UTF_8),
        Files.readString(err, StandardCharsets.UTF_8));
  }

  @Test
  void launcher_hashGoldenTokens_printsVllmHashes() throws Exception {
    Path tokens = Files.writeString(dir.resolve("golden.txt"), GoldenVectors.tokensText());
    Result result =
        launch(
            "hash",
            "--algo",
            "sha256_cbor",
            "--seed",
            "42",
            "--block-size",
            "16",
            "--tokens",
            tokens.toString());
    assertThat(result.err()).isEmpty();
    assertThat(result.exitCode()).isZero();
    assertThat(result.out().split("\n")).containsExactly(GoldenVectors.baseHashesDecimal());
  }

  @Test
  void launcher_unknownAlgo_exit2OneLine() throws Exception {
    Result result = launch("hash", "--algo", "nope", "--seed", "42", "--tokens", "x");
    assertThat(result.exitCode()).isEqualTo(2);
    assertThat(result.out()).isEmpty();
    assertThat(result.err()).startsWith("kvindex hash: unknown --algo 'nope'").hasLineCount(1);
  }
}
