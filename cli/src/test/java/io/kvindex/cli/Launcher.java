package io.kvindex.cli;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs the real {@code scripts/kvindex} launcher for the {@code *LauncherIT} tests. The build runs
 * them in the integration-test phase, after package has made {@code cli/target/kvindex-cli.jar} and
 * {@code cli/target/lib/} (or the lab launcher's {@code lab/launcher/target/kvindex-lab.jar}, for
 * the lab's commands); the launcher is told not to rebuild (that would start Maven inside Maven).
 * Not thread-safe: one per test.
 */
final class Launcher {
  record Result(int exitCode, String out, String err) {}

  private Launcher() {}

  /** Runs {@code scripts/kvindex args...}, capturing its output in files under {@code dir}. */
  static Result run(Path dir, String... args) throws IOException, InterruptedException {
    return run(Duration.ofMinutes(2), dir, args);
  }

  /** {@link #run(Path, String...)} for a command that may take up to {@code limit}. */
  static Result run(Duration limit, Path dir, String... args)
      throws IOException, InterruptedException {
    // Set only by the build's launcher-tests execution: in the test phase (for example with
    // -Dtest=...) the jar may still be an older build.
    assumeTrue(
        Boolean.getBoolean("kvindex.launcherTests"),
        "runs in the integration-test phase, after package");
    Path root = repositoryRoot();
    String jar = labCommand(args) ? LAB_JAR : CLI_JAR;
    assumeTrue(Files.isRegularFile(root.resolve(jar)), jar + " is built by the package phase");
    List<String> command = new ArrayList<>(List.of("bash", "scripts/kvindex"));
    command.addAll(List.of(args));
    Path out = dir.resolve("stdout");
    Path err = dir.resolve("stderr");
    ProcessBuilder builder =
        new ProcessBuilder(command).directory(root.toFile()).redirectOutput(out.toFile());
    builder.redirectError(err.toFile()).environment().put("KVINDEX_NO_BUILD", "1");
    Process process = builder.start();
    if (!process.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS)) {
      process.descendants().forEach(ProcessHandle::destroyForcibly);
      process.destroyForcibly();
      throw new AssertionError("scripts/kvindex did not finish within " + limit);
    }
    return new Result(
        process.exitValue(),
        Files.readString(out, StandardCharsets.UTF_8),
        Files.readString(err, StandardCharsets.UTF_8));
  }

  private static final String CLI_JAR = "cli/target/kvindex-cli.jar";
  private static final String LAB_JAR = "lab/launcher/target/kvindex-lab.jar";

  /** Whether {@code scripts/kvindex} runs these arguments from the lab launcher. */
  private static boolean labCommand(String... args) {
    return args.length > 0 && List.of("sim", "demo", "chaos", "bench").contains(args[0]);
  }

  private static Path repositoryRoot() {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null && !Files.isRegularFile(dir.resolve("scripts/kvindex"))) {
      dir = dir.getParent();
    }
    assumeTrue(dir != null, "scripts/kvindex not found above the working directory");
    return dir;
  }
}
