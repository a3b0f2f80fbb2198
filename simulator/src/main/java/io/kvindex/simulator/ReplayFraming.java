package io.kvindex.simulator;

/** How the replay ROUTER frames its replies; vLLM changed it in PR #45177 (2026-07-07). */
public enum ReplayFraming {
  /** Before PR #45177: data {@code [seq8, payload]}, end marker {@code [FF x 8, ""]}. */
  SEQ_PAYLOAD,
  /**
   * From PR #45177 on: data {@code [topic, seq8, payload]} like live messages, end marker {@code
   * ["", FF x 8, ""]}.
   */
  TOPIC_SEQ_PAYLOAD
}
