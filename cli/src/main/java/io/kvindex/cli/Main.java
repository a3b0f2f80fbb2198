package io.kvindex.cli;

/** The single entry point behind {@code scripts/kvindex}. */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    System.out.println("kvindex");
  }
}
