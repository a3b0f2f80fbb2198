package io.kvindex.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.hash.GoldenVectors;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the real {@code scripts/kvindex} launcher. The build runs this class in the integration-test
 * phase, after package has made {@code cli/target/kvindex-cli.jar} and {@code cli/target/lib/}; the
 * launcher is told not to rebuild (that would start Maven inside Maven).
 */
class HashLauncherIT {
  @TempDir Path dir;

  @Test
  void launcher_hashGoldenTokens_printsVllmHashes() throws Exception {
    Path tokens = Files.writeString(dir.resolve("golden.txt"), GoldenVectors.tokensText());
    Launcher.Result result =
        Launcher.run(
            dir,
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
    Launcher.Result result =
        Launcher.run(dir, "hash", "--algo", "nope", "--seed", "42", "--tokens", "x");
    assertThat(result.exitCode()).isEqualTo(2);
    assertThat(result.out()).isEmpty();
    assertThat(result.err()).startsWith("kvindex hash: unknown --algo 'nope'").hasLineCount(1);
  }
}
