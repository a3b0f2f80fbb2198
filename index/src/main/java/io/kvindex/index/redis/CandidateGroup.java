package io.kvindex.index.redis;

import io.kvindex.index.PodMatch;
import io.kvindex.index.redis.PodRecords.PodName;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One index group's candidates of a candidate list, in request order, with their keys and their
 * positions in the request; and the records and decoder layout a lookup of them last resolved,
 * which later lookups take as they are while the group's cached records are the same and the time
 * is within the span those records are valid for. Made once per candidate list and model; its lists
 * are never changed once {@link #complete}d. Thread-safe after that.
 */
final class CandidateGroup {
  /**
   * A pod's group, field, holder field and digest (its name in speculative routes): lookups need
   * them per candidate.
   */
  record PodKeys(PodName name, int group, byte[] field, byte[] holder, long digest) {}

  /**
   * The decoder layout of the candidates' live records (a pod with none, or not live, has no
   * streams), as resolved from {@code records} at {@code from}: every candidate's cached record was
   * usable then, and each usable or live verdict stays as it was until {@code until}, the earliest
   * deadline that had not passed (Redis clock, ms).
   */
  record ResolvedRecords(PodRecords records, StreamLayout layout, long from, long until) {
    boolean covers(PodRecords current, long nowMs) {
      return current == records && nowMs >= from && nowMs <= until;
    }
  }

  final int g;
  final List<PodKeys> keys = new ArrayList<>();
  private final List<PodMatch> noneAdded = new ArrayList<>();
  private final List<Integer> positionsAdded = new ArrayList<>();
  private int[] positions;
  private PodMatch[] none;

  /** The candidates' digests, ascending, and the candidate each belongs to. */
  private long[] digests;

  private int[] digestOwners;

  volatile ResolvedRecords resolved;

  CandidateGroup(int g) {
    this.g = g;
  }

  void add(String pod, PodKeys podKeys, int position) {
    keys.add(podKeys);
    noneAdded.add(PodMatch.none(pod));
    positionsAdded.add(position);
  }

  /** Done adding: the arrays lookups read. */
  CandidateGroup complete() {
    positions = positionsAdded.stream().mapToInt(Integer::intValue).toArray();
    none = noneAdded.toArray(PodMatch[]::new);
    Integer[] order = new Integer[keys.size()];
    for (int i = 0; i < order.length; i++) {
      order[i] = i;
    }
    Arrays.sort(order, (a, b) -> Long.compare(keys.get(a).digest(), keys.get(b).digest()));
    digests = new long[order.length];
    digestOwners = new int[order.length];
    for (int i = 0; i < order.length; i++) {
      digests[i] = keys.get(order[i]).digest();
      digestOwners[i] = order[i];
    }
    return this;
  }

  int size() {
    return keys.size();
  }

  /** Each candidate's position in the request. */
  int[] positions() {
    return positions;
  }

  /** The candidate whose digest this is, or -1 for none. */
  int candidateOf(long digest) {
    int at = Arrays.binarySearch(digests, digest);
    return at < 0 ? -1 : digestOwners[at];
  }

  /**
   * The decoder layout of the candidates' live records in {@code learned} at {@code nowMs} (Redis
   * clock); kept for the lookups after this one when every candidate's record was usable (none need
   * reading again), for as long as no deadline passes.
   */
  ResolvedRecords resolve(PodRecords learned, long nowMs) {
    List<byte[]> live = new ArrayList<>(keys.size());
    boolean allUsable = true;
    long until = Long.MAX_VALUE;
    for (PodKeys candidate : keys) {
      allUsable &= learned.usable(candidate.name(), nowMs);
      byte[] v = learned.get(candidate.name());
      boolean alive = v != null && v.length >= 8 && Bytes.deadline(v) >= nowMs;
      live.add(alive ? v : null);
      if (alive) {
        until = Math.min(until, Bytes.deadline(v));
      }
    }
    ResolvedRecords resolved =
        new ResolvedRecords(learned, StreamLayout.of(live, true), nowMs, until);
    if (allUsable) {
      this.resolved = resolved;
    }
    return resolved;
  }

  /** Each candidate's {@link PodMatch#none}, in order. */
  PodMatch[] none() {
    return none;
  }
}
