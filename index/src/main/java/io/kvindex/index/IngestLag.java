package io.kvindex.index;

import io.kvindex.common.Check;
import java.time.Duration;

/**
 * What the owner of one of a pod's streams last reported of how far it is behind its engine ({@link
 * PrefixIndex#reportLagAsync}), as a router reads it ({@link PrefixIndex#ingestLagAsync}). An index
 * that lists blocks the engine removed, or lacks blocks it stored, because its stream has not
 * applied them yet is not drifting: routers judge drift only on what the lag cannot explain.
 * Immutable.
 *
 * @param rank the stream's data-parallel rank
 * @param lag how far behind its engine the stream was when it reported (the worst of its batches
 *     applied since its report before, or its oldest batch still waiting)
 * @param age how long ago it reported, by the index's clock: an owner that keeps up reports every
 *     second, so an old report means one that does not (or one that stopped)
 */
public record IngestLag(int rank, Duration lag, Duration age) {
  public IngestLag {
    Check.atLeast(rank, 0, "rank");
    Check.notNull(lag, "lag");
    Check.notNull(age, "age");
  }
}
