package io.kvindex.lab;

import io.kvindex.chaos.ChaosCommand;
import io.kvindex.cli.BenchCommand;
import io.kvindex.cli.Main;
import io.kvindex.demo.DemoCommand;
import io.kvindex.simulator.SimCommand;
import picocli.CommandLine;

/**
 * The lab's {@code kvindex} launcher: the product's root command ({@link Main}) with the lab's
 * commands added, {@code bench}, {@code sim}, {@code demo} and {@code chaos}. {@code
 * scripts/kvindex} runs it for those commands; the production image holds only {@link Main}.
 *
 * <p>Not thread-safe: one instance per command line.
 */
public final class LabMain {
  private LabMain() {}

  public static void main(String[] args) {
    Main.run(commandLine(), args);
  }

  /** The product's root command line with the lab's commands, for the launcher and tests. */
  public static CommandLine commandLine() {
    CommandLine commandLine = Main.commandLine();
    commandLine.addSubcommand(new BenchCommand());
    commandLine.addSubcommand(new SimCommand());
    commandLine.addSubcommand(new DemoCommand());
    commandLine.addSubcommand(new ChaosCommand());
    commandLine.getCommandSpec().usageMessage().footer(new String[0]);
    return commandLine;
  }
}
