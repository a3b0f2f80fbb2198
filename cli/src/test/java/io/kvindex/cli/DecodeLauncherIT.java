package io.kvindex.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEventBatch;
import io.kvindex.wire.KvEventEncoder;
import io.kvindex.wire.WireEra;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs {@code scripts/kvindex decode} for real, in the integration-test phase after package (see
 * the cli pom); the launcher is told not to rebuild.
 */
class DecodeLauncherIT {
  private static final long GOLDEN_0 = Long.parseUnsignedLong("17705339885301241772");

  @TempDir Path dir;

  private record Result(int exitCode, String out, String err) {}

  @Test
  void launcher_decodeMapEraPayload_printsJson() throws Exception {
    byte[] payload =
        KvEventEncoder.of(WireEra.MAP)
            .encode(
                KvEventBatch.of(
                    1.5, List.of(BlockStored.of(List.of(GOLDEN_0), null, List.of(1, 2), 2)), 0));
    Path file = Files.write(dir.resolve("batch.bin"), payload);

    Result result = launch("decode", "--compact", file.toString());

    assertThat(result.err()).isEmpty();
    assertThat(result.exitCode()).isZero();
    assertThat(result.out())
        .hasLineCount(1)
        .contains("\"block_hashes\":[\"17705339885301241772\"]", "\"data_parallel_rank\":0");
  }

  @Test
  void launcher_decodeTruncatedPayload_exit2OneLine() throws Exception {
    byte[] payload =
        KvEventEncoder.of(WireEra.V0_22)
            .encode(
                KvEventBatch.of(1.5, List.of(BlockStored.of(List.of(1L), null, List.of(), 0)), 0));
    Path file = Files.write(dir.resolve("bad.bin"), Arrays.copyOf(payload, payload.length - 3));

    Result result = launch("decode", file.toString());

    assertThat(result.exitCode()).isEqualTo(2);
    assertThat(result.out()).isEmpty();
    assertThat(result.err()).hasLineCount(1).contains("is not a valid KVEventBatch", "at byte ");
  }

  private Result launch(String... args) throws Exception {
    assumeTrue(
        Boolean.getBoolean("kvindex.launcherTests"),
        "runs in the integration-test phase, after package");
    Path root = Path.of("").toAbsolutePath();
    while (root != null && !Files.isRegularFile(root.resolve("scripts/kvindex"))) {
      root = root.getParent();
    }
    assumeTrue(root != null, "scripts/kvindex not found above the working directory");
    assumeTrue(
        Files.isRegularFile(root.resolve("cli/target/kvindex-cli.jar")),
        "cli/target/kvindex-cli.jar is built by the package phase");
    List<String> command = new java.util.ArrayList<>(List.of("bash", "scripts/kvindex"));
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
}
