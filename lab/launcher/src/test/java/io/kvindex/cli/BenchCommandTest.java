package io.kvindex.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BenchCommandTest {

  @Test
  void bench_noBenchmark_usageOnStderrExit2() {
    CliRun run = LabRun.of("bench");
    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err())
        .startsWith("kvindex bench: missing benchmark")
        .contains("index", "router");
  }

  @Test
  void benchIndex_withoutOut_exit2() {
    CliRun run = LabRun.of("bench", "index", "--quick");
    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err()).contains("--out");
  }

  @Test
  void benchIndex_clusterUri_clearErrorExit1NoFile(@TempDir Path dir) {
    Path out = dir.resolve("index.json");
    CliRun run =
        LabRun.of(
            "bench",
            "index",
            "--redis",
            "redis-cluster://127.0.0.1:1,127.0.0.1:2",
            "--out",
            out.toString());
    assertThat(run.exitCode()).isEqualTo(1);
    assertThat(run.err()).contains("standalone server").hasLineCount(1);
    assertThat(Files.exists(out)).isFalse();
  }

  @Test
  void benchRouter_withRedis_exit2() {
    CliRun run = LabRun.of("bench", "router", "--redis", "redis://127.0.0.1:1", "--out", "x.json");
    assertThat(run.exitCode()).isEqualTo(2);
  }

  @Test
  void benchCompare_withRedis_exit2() {
    CliRun run = LabRun.of("bench", "compare", "--redis", "redis://127.0.0.1:1", "--out", "x.json");
    assertThat(run.exitCode()).isEqualTo(2);
  }

  @Test
  void benchScale_withoutOut_exit2() {
    CliRun run = LabRun.of("bench", "scale", "--quick");
    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err()).contains("--out");
  }

  @Test
  void bench_noBenchmark_usageListsCompareAndScale() {
    assertThat(LabRun.of("bench").err()).contains("compare", "scale");
  }
}
