package io.kvindex.cli;

import java.io.ByteArrayInputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import picocli.CommandLine;

/** One in-process run of the root command with captured output. */
record CliRun(int exitCode, String out, String err) {

  static CliRun of(String... args) {
    return withStdin("", args);
  }

  static CliRun withStdin(String stdin, String... args) {
    return in(Main.commandLine(), stdin, args);
  }

  /** One run of {@code commandLine} (the root command, perhaps with the lab's commands added). */
  static CliRun in(CommandLine commandLine, String stdin, String... args) {
    HashCommand hash = commandLine.getSubcommands().get("hash").getCommand();
    hash.stdin = new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8));
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    commandLine.setOut(new PrintWriter(out, true));
    commandLine.setErr(new PrintWriter(err, true));
    int exitCode = commandLine.execute(args);
    return new CliRun(exitCode, out.toString(), err.toString());
  }

  String[] outLines() {
    return out.isEmpty() ? new String[0] : out.split("\n");
  }
}
