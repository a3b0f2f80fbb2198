package io.kvindex.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class ChaosCommandTest {
  @TempDir Path dir;

  private record Result(int exitCode, String err) {}

  private Result run(String... args) {
    CommandLine line = new CommandLine(new ChaosCommand());
    StringWriter err = new StringWriter();
    line.setOut(new PrintWriter(new StringWriter(), true));
    line.setErr(new PrintWriter(err, true));
    return new Result(line.execute(args), err.toString());
  }

  @Test
  void call_phasesNotThree_usageErrorNamingTheForm() {
    Result r = run("--quick", "--phases", "2,2", "--out", dir.resolve("c.json").toString());
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).contains("--phases takes three whole numbers of seconds from 1 to 600");
  }

  @Test
  void call_phaseOfZero_usageError() {
    Result r = run("--phases", "0,2,3", "--out", dir.resolve("c.json").toString());
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).contains("got [0, 2, 3]");
  }

  @Test
  void timings_withPhases_keepRatePodsAndShape() {
    ChaosRun.Timings t =
        ChaosRun.Timings.QUICK.withPhases(
            Duration.ofSeconds(2), Duration.ofSeconds(2), Duration.ofSeconds(3));
    assertThat(t.warm().toSeconds()).isEqualTo(2);
    assertThat(t.after().toSeconds()).isEqualTo(3);
    assertThat(t.rate()).isEqualTo(ChaosRun.Timings.QUICK.rate());
    assertThat(t.pods()).isEqualTo(ChaosRun.Timings.QUICK.pods());
    assertThat(t.quick()).isTrue();
  }
}
