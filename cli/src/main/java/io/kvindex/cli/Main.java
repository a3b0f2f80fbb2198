package io.kvindex.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.util.Properties;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.HelpCommand;
import picocli.CommandLine.IVersionProvider;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.Spec;

/**
 * The {@code kvindex} root command behind {@code scripts/kvindex}: the product's commands. Each
 * subcommand is one class registered in the {@code subcommands} list below. The lab's launcher
 * ({@code io.kvindex.lab.LabMain}, module {@code lab/launcher}) adds sim, demo, chaos and bench to
 * this same command line.
 *
 * <p>Exit codes: 0 success, 1 the command failed (bad input data, for example an unreadable file or
 * a token that is not a number: {@link InputException}), 2 bad command line (unknown command or
 * option, bad option value). Errors are one line on stderr; stdout carries only command output, and
 * logs go to stderr.
 *
 * <p>Not thread-safe: one instance per command line.
 */
@Command(
    name = "kvindex",
    mixinStandardHelpOptions = true,
    versionProvider = Main.Version.class,
    description = "A shared, Redis-backed index of which vLLM pod holds which KV-cache blocks.",
    synopsisSubcommandLabel = "COMMAND",
    footer = {
      "",
      "The lab's commands (sim, demo, chaos, bench) are in the lab launcher: scripts/kvindex in a"
          + " source checkout, or the image's lab target (docker build --target lab)."
    },
    subcommands = {
      HelpCommand.class,
      HashCommand.class,
      DecodeCommand.class,
      InspectCommand.class,
      io.kvindex.router.http.RouterCommand.class,
      io.kvindex.ingester.IngesterCommand.class,
      io.kvindex.epp.EppCommand.class,
    })
public final class Main implements Callable<Integer> {

  private static final String NODELAY = "sun.net.httpserver.nodelay";

  @Spec CommandSpec spec;

  public static void main(String[] args) {
    run(commandLine(), args);
  }

  /** Runs {@code commandLine} (this root command, perhaps with more subcommands) and exits. */
  public static void run(CommandLine commandLine, String[] args) {
    // The JDK HTTP server leaves Nagle's algorithm on, which holds every small JSON answer of the
    // router, ingester and simulator endpoints until the client's delayed ACK (tens of ms).
    if (System.getProperty(NODELAY) == null) {
      System.setProperty(NODELAY, "true");
    }
    System.exit(commandLine.execute(args));
  }

  /** Runs one command line in this JVM and returns its exit code. */
  public static int execute(String... args) {
    return commandLine().execute(args);
  }

  /** The configured root command line, for tests that capture its output streams. */
  public static CommandLine commandLine() {
    CommandLine commandLine = new CommandLine(new Main());
    commandLine.setParameterExceptionHandler(Main::usageError);
    commandLine.setExecutionExceptionHandler(Main::failure);
    return commandLine;
  }

  /** {@code kvindex} without a command: the usage on stderr, exit 2. */
  @Override
  public Integer call() {
    CommandLine commandLine = spec.commandLine();
    commandLine.getErr().println("kvindex: missing command");
    commandLine.usage(commandLine.getErr());
    return commandLine.getCommandSpec().exitCodeOnInvalidInput();
  }

  private static int usageError(ParameterException e, String[] args) {
    CommandLine commandLine = e.getCommandLine();
    String name = commandLine.getCommandSpec().qualifiedName();
    commandLine.getErr().println(name + ": " + e.getMessage() + " (see '" + name + " --help')");
    return commandLine.getCommandSpec().exitCodeOnInvalidInput();
  }

  private static int failure(Exception e, CommandLine commandLine, ParseResult parsed) {
    PrintWriter err = commandLine.getErr();
    String name = commandLine.getCommandSpec().qualifiedName();
    if (e instanceof InputException) {
      err.println(name + ": " + e.getMessage());
    } else {
      err.println(name + ": unexpected failure, please report it: " + e);
      e.printStackTrace(err);
    }
    err.flush();
    return commandLine.getCommandSpec().exitCodeOnExecutionException();
  }

  /** The version from the build, with the Java runtime. */
  static final class Version implements IVersionProvider {
    @Override
    public String[] getVersion() throws IOException {
      Properties properties = new Properties();
      try (InputStream in = Main.class.getResourceAsStream("version.properties")) {
        if (in != null) {
          properties.load(in);
        }
      }
      return new String[] {
        "kvindex " + properties.getProperty("version", "unknown"),
        "Java " + Runtime.version() + " (" + System.getProperty("java.vendor") + ")"
      };
    }
  }
}
