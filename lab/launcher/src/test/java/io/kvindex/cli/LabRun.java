package io.kvindex.cli;

import io.kvindex.lab.LabMain;

/** One in-process run of the lab launcher's root command, as {@link CliRun} of the product's. */
final class LabRun {
  private LabRun() {}

  static CliRun of(String... args) {
    return CliRun.in(LabMain.commandLine(), "", args);
  }
}
