package io.kvindex.ingester.lease;

/**
 * When a replica short of its fair share watches, between rounds, for a lease another replica gave
 * up, as a state machine: idle, or watching until a deadline with the count of given-up leases last
 * seen. A round that finds the replica short after the replicas or the streams changed, or after it
 * lost leases, starts a watch of one lease TTL, long enough for every other replica's next round to
 * shed; holding the fair share ends it. Pure (the time is passed in); not thread-safe: the
 * coordinator's round lock guards it.
 */
final class ReleaseWatch {
  /** Until when the watch runs (nanos); past it, the watch is idle. */
  private long untilNanos;

  /** Leases given up, as the index last said. */
  private long releasesSeen;

  private int lastLiveReplicas;
  private int lastStreams = -1;
  private int heldAfterLastRound;

  /** An idle watch as of {@code nowNanos}. */
  ReleaseWatch(long nowNanos) {
    this.untilNanos = nowNanos;
  }

  /** Whether a watch runs at {@code nowNanos}. */
  boolean watching(long nowNanos) {
    return nowNanos - untilNanos < 0;
  }

  /**
   * A round levelled with {@code held} streams of a fair share of {@code fair}: whether it must
   * watch, because it is short after the replicas or the streams changed, or after it lost leases
   * (fenced after an index loss, or paused past its TTL): another replica may shed what this one is
   * short of.
   */
  boolean shortAfterChange(int liveReplicas, int streams, int held, int fair) {
    boolean changed =
        liveReplicas != lastLiveReplicas || streams != lastStreams || held < heldAfterLastRound;
    lastLiveReplicas = liveReplicas;
    lastStreams = streams;
    return held < fair && changed;
  }

  /** Starts watching until {@code untilNanos}, {@code releases} leases given up so far. */
  void start(long releases, long untilNanos) {
    this.releasesSeen = releases;
    this.untilNanos = untilNanos;
  }

  /** The replica holds its fair share: the watch ends. */
  void stop(long nowNanos) {
    untilNanos = nowNanos;
  }

  /** Whether more leases were given up than last seen. */
  boolean released(long releases) {
    return releases != releasesSeen;
  }

  /** The given-up leases are all looked at. */
  void seen(long releases) {
    releasesSeen = releases;
  }

  /** The round ended holding {@code held} streams. */
  void roundEnded(int held) {
    heldAfterLastRound = held;
  }
}
