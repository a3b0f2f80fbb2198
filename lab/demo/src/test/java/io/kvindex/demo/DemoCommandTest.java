package io.kvindex.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class DemoCommandTest {

  private record Result(int exitCode, String out, String err) {}

  private static Result run(String... args) {
    CommandLine line = new CommandLine(new DemoCommand());
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    line.setOut(new PrintWriter(out, true));
    line.setErr(new PrintWriter(err, true));
    return new Result(line.execute(args), out.toString(), err.toString());
  }

  @Test
  void call_badDuration_usageError() {
    Result r = run("--duration", "soon");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).contains("'soon' is not a duration");
  }

  @Test
  void call_tooFewPods_usageError() {
    Result r = run("--pods", "1");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).contains("pods must be within [2, 256]");
  }

  @Test
  void call_unreachableRedis_oneLineAndExit1() throws Exception {
    int port;
    try (ServerSocket free = new ServerSocket(0)) {
      port = free.getLocalPort();
    }
    Result r = run("--pods", "2", "--duration", "2s", "--redis", "redis://127.0.0.1:" + port);
    assertThat(r.exitCode()).isEqualTo(1);
    assertThat(r.err()).startsWith("kvindex demo: ").doesNotContain("\tat ");
  }
}
