package io.kvindex.ingester.stream;

import io.kvindex.wire.EventMessage;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.zeromq.ZContext;

/** Whole replays for tests: every batch a pod's replay ring sends from a sequence on. */
public final class Replays {

  /**
   * What a replay returned.
   *
   * @param batches the batches, in the order received
   * @param ended true when the end marker arrived before the idle bound
   */
  public record Result(List<EventMessage> batches, boolean ended) {
    public long firstSeq() {
      return batches.isEmpty() ? -1 : batches.get(0).seq();
    }
  }

  private Replays() {}

  /** Asks for every batch from {@code fromSeq} on; waits at most {@code idle} for each message. */
  public static Result fetch(ZContext ctx, String endpoint, long fromSeq, Duration idle) {
    List<EventMessage> out = new ArrayList<>();
    Replay.Read read = Replay.fetch(ctx, endpoint, fromSeq, idle, -1, null, out::add);
    return new Result(out, read.ended());
  }
}
