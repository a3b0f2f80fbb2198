package io.kvindex.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.HelpCommand;

/** {@code kvindex bench}: the benchmarks, one subcommand each. Not thread-safe. */
@Command(
    name = "bench",
    mixinStandardHelpOptions = true,
    synopsisSubcommandLabel = "BENCHMARK",
    description =
        "Run a benchmark against Redis servers it starts itself; results go to a JSON file.",
    subcommands = {HelpCommand.class, RouterBench.class})
final class BenchCommand implements Runnable {
  @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw new picocli.CommandLine.ParameterException(
        spec.commandLine(), "missing benchmark, for example 'kvindex bench router'");
  }
}
