package io.kvindex.wire;

/** The two layouts of vLLM's replay replies. Immutable. */
public enum ReplayFraming {
  /** Before vLLM PR #45177 (2026-07-07): {@code [seq8, payload]}, end {@code [FF×8, ""]}. */
  NO_TOPIC,
  /**
   * From vLLM PR #45177 on: {@code [topic, seq8, payload]} like a live message, end {@code ["",
   * FF×8, ""]}.
   */
  WITH_TOPIC
}
