package io.kvindex.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.service.DurationConverter;
import io.kvindex.simulator.load.TimedRequest;
import io.kvindex.simulator.load.Workload;
import io.kvindex.simulator.load.WorkloadTest;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class SimCommandTest {

  private record Run(int exit, String out, String err) {}

  private static Run run(String... args) {
    CommandLine cmd = new CommandLine(new SimCommand());
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    cmd.setOut(new PrintWriter(out));
    cmd.setErr(new PrintWriter(err));
    int exit = cmd.execute(args);
    return new Run(exit, out.toString(), err.toString());
  }

  @Test
  void call_traceRunPrintsEndpointsAndTheFinalHitRate() throws Exception {
    Run run =
        run(
            "--pods", "2",
            "--dp", "2",
            "--trace", WorkloadTest.miniTrace().toString(),
            "--trace-block-tokens", "32",
            "--speed", "max",
            "--router", "round-robin",
            "--topic", "kv@{pod}@{model}");

    assertThat(run.exit()).as(run.err()).isZero();
    assertThat(run.out())
        .containsPattern(
            "pod-0 rank=0 model=sim-model pub=tcp://127\\.0\\.0\\.1:\\d+ replay=tcp://")
        .contains("pod-1 rank=1 ")
        .contains("http=http://127.0.0.1:")
        .contains("topic=\"kv@pod-1@sim-model\"")
        .containsPattern(
            "done: t=[0-9.]+s requests=5 failed=0 prompt_tokens=348 cached_tokens=\\d+");
  }

  @Test
  void call_bindHost_podsServeHttpThereToo() {
    Run run =
        run("--pods", "2", "--bind-host", "127.0.0.2", "--speed", "max", "--max-requests", "1");

    assertThat(run.exit()).as(run.err()).isZero();
    assertThat(run.out())
        .containsPattern("pod-0 rank=0 model=sim-model pub=tcp://127\\.0\\.0\\.2:\\d+ ")
        .containsPattern("pod-1 .* http=http://127\\.0\\.0\\.2:\\d+ ");
  }

  @Test
  void call_syntheticRunStopsAtMaxRequests() {
    Run run = run("--pods", "1", "--speed", "max", "--max-requests", "20", "--era", "V0_10_2");

    assertThat(run.exit()).as(run.err()).isZero();
    assertThat(run.out()).contains("requests=20 failed=0");
  }

  @Test
  void call_badInputsAreOneLineErrors() {
    Run missing = run("--trace", "no-such-trace.jsonl", "--speed", "max");
    assertThat(missing.exit()).isEqualTo(1);
    assertThat(missing.err()).startsWith("sim: cannot read the trace");

    Run badSpeed = run("--speed", "fast");
    assertThat(badSpeed.exit()).isEqualTo(2);
    assertThat(badSpeed.err()).contains("not a positive number or max");

    Run badRouter = run("--router", "smart", "--max-requests", "1");
    assertThat(badRouter.exit()).isEqualTo(1);
    assertThat(badRouter.err())
        .contains("--router must be random, round-robin, oracle or router URLs");
  }

  @Test
  void durationConverter_acceptsShortAndIsoForms() {
    DurationConverter c = new DurationConverter();
    assertThat(c.convert("250ms").toMillis()).isEqualTo(250);
    assertThat(c.convert("90s").getSeconds()).isEqualTo(90);
    assertThat(c.convert("5m").toMinutes()).isEqualTo(5);
    assertThat(c.convert("PT1H").toHours()).isEqualTo(1);
  }

  /**
   * The trace written by default (12 000 records) reads back as a Mooncake trace whose prompts
   * average about 12 000 tokens (750 blocks of 16), as the public conversation traces do: over the
   * whole trace and over its second half, once the sessions' histories have grown.
   */
  @Test
  void call_writeTrace_conversationShapedMooncakeTrace(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("trace.jsonl");
    Run written = run("--write-trace", file.toString());
    assertThat(written.exit()).as(written.err()).isZero();
    long tokens = 0;
    long laterTokens = 0;
    int requests = 0;
    try (Workload trace = Workload.mooncakeTrace(file, 512)) {
      while (trace.hasNext()) {
        TimedRequest r = trace.next();
        tokens += r.request().promptLength();
        if (requests >= SimCommand.DEFAULT_TRACE_REQUESTS / 2) {
          laterTokens += r.request().promptLength();
        }
        requests++;
      }
    }
    assertThat(requests).isEqualTo(SimCommand.DEFAULT_TRACE_REQUESTS);
    assertThat(tokens / requests).as("mean prompt tokens").isBetween(11_000L, 13_000L);
    assertThat(laterTokens / (requests / 2))
        .as("mean prompt tokens of the second half")
        .isBetween(11_000L, 13_000L);
  }
}
