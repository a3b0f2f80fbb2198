package io.kvindex.wire;

import java.util.Objects;

/**
 * One message a DEALER receives from vLLM's replay ROUTER: a replayed batch or the end marker.
 * Immutable.
 */
public sealed interface ReplayReply permits ReplayReply.Batch, ReplayReply.End {

  /** A replayed batch: the same payload bytes that were published live with this sequence. */
  record Batch(EventMessage message) implements ReplayReply {
    public Batch {
      Objects.requireNonNull(message, "message");
    }
  }

  /** The end of the replay (sequence -1 and/or an empty payload). */
  record End() implements ReplayReply {
    /** The only instance anyone needs. */
    public static final End INSTANCE = new End();
  }
}
