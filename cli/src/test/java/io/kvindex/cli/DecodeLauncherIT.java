package io.kvindex.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEventBatch;
import io.kvindex.wire.KvEventEncoder;
import io.kvindex.wire.WireEra;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs {@code scripts/kvindex decode} for real, in the integration-test phase after package (see
 * the cli pom); the launcher is told not to rebuild.
 */
class DecodeLauncherIT {
  private static final long GOLDEN_0 = Long.parseUnsignedLong("17705339885301241772");

  @TempDir Path dir;

  @Test
  void launcher_decodeMapEraPayload_printsJson() throws Exception {
    byte[] payload =
        KvEventEncoder.of(WireEra.MAP)
            .encode(
                KvEventBatch.of(
                    1.5, List.of(BlockStored.of(List.of(GOLDEN_0), null, List.of(1, 2), 2)), 0));
    Path file = Files.write(dir.resolve("batch.bin"), payload);

    Launcher.Result result = Launcher.run(dir, "decode", "--compact", file.toString());

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

    Launcher.Result result = Launcher.run(dir, "decode", file.toString());

    assertThat(result.exitCode()).isEqualTo(2);
    assertThat(result.out()).isEmpty();
    assertThat(result.err()).hasLineCount(1).contains("is not a valid KVEventBatch", "at byte ");
  }
}
