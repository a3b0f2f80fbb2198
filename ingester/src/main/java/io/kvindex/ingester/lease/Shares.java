package io.kvindex.ingester.lease;

import io.kvindex.index.StreamId;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;

/**
 * Which streams one replica reaches for, pure: with S streams and N live replicas the fair share is
 * ceil(S / N); preference is rendezvous hashing on (replica, stream), so replicas mostly reach for
 * different streams and a returning replica gets much the same set back. Immutable; thread-safe.
 */
final class Shares {
  private final String replica;

  Shares(String replica) {
    this.replica = replica;
  }

  /**
   * The most streams one of {@code replicas} live replicas holds when {@code streams} are shared.
   */
  static int fair(int streams, int replicas) {
    return (streams + replicas - 1) / replicas;
  }

  /** The streams, this replica's most preferred first. */
  List<StreamId> ranked(Collection<StreamId> streams) {
    List<StreamId> ranked = new ArrayList<>(streams);
    ranked.sort(Comparator.comparingLong(this::preference).reversed());
    return ranked;
  }

  /** This replica's rendezvous weight for a stream. */
  long preference(StreamId s) {
    long h = 1125899906842597L;
    for (char c : (replica + "|" + s.model() + "|" + s.pod() + "|" + s.dpRank()).toCharArray()) {
      h = 31 * h + c;
    }
    h ^= h >>> 33;
    h *= 0xff51afd7ed558ccdL;
    h ^= h >>> 33;
    return h;
  }
}
