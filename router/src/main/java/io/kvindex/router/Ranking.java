package io.kvindex.router;

import io.kvindex.index.LookupResult;
import io.kvindex.index.PodMatch;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** The scores of a lookup's answer, candidates ranked highest first. Thread-safe (stateless). */
final class Ranking {
  private Ranking() {}

  /** The scores of a prompt without a full block: every candidate a miss. */
  static Scores none(ScoreRequest request, ModelKeys keys, long[] blockKeys) {
    List<PodMatch> none = new ArrayList<>();
    request.candidatePods().forEach(pod -> none.add(PodMatch.none(pod)));
    return new Scores(request.model(), keys.blockSize(), blockKeys, 0, none, Scores.Outcome.MISS);
  }

  /** The scores of a prompt with at least one full block, from the index's answer. */
  static Scores scores(
      ScoreRequest request, ModelKeys keys, long[] blockKeys, LookupResult result) {
    int blockSize = keys.blockSize();
    long affinity = blockKeys[0];
    if (!result.complete()) {
      return Scores.unavailable(request.model(), blockSize, blockKeys);
    }
    // Highest score first, ties in request order: the pods holding something sorted (a stable
    // sort), then the rest (scores are never negative) as they came.
    int candidates = request.candidatePods().size();
    // The result lists the candidates in request order; it names every one when every group
    // answered, so it is read in order rather than looked up pod by pod.
    Iterable<PodMatch> matches =
        result.pods().size() == candidates
            ? result.pods().values()
            : request.candidatePods().stream()
                .map(pod -> result.pods().getOrDefault(pod, PodMatch.none(pod)))
                .toList();
    PodMatch[] ranked = new PodMatch[candidates];
    int warm = 0;
    boolean hit = false;
    for (PodMatch match : matches) {
      if (match.score() > 0) {
        ranked[warm++] = match;
      }
      hit |= match.depth() > 0;
    }
    int at = warm;
    for (PodMatch match : matches) {
      if (!(match.score() > 0)) {
        ranked[at++] = match;
      }
    }
    sortByScore(ranked, warm);
    return new Scores(
        request.model(),
        blockSize,
        blockKeys,
        affinity,
        Arrays.asList(ranked),
        hit ? Scores.Outcome.HIT : Scores.Outcome.MISS);
  }

  /** Candidates sorted apart up to this many; more go to the library's merge sort. */
  private static final int INSERTION_SORTED = 64;

  /**
   * Sorts {@code ranked[0, n)} by score, highest first, keeping the order of equal scores: an
   * insertion sort for the few warm candidates a prompt has, {@link Arrays#sort} (stable) for more.
   */
  static void sortByScore(PodMatch[] ranked, int n) {
    if (n > INSERTION_SORTED) {
      Arrays.sort(ranked, 0, n, (a, b) -> Double.compare(b.score(), a.score()));
      return;
    }
    for (int i = 1; i < n; i++) {
      PodMatch match = ranked[i];
      int j = i - 1;
      for (; j >= 0 && ranked[j].score() < match.score(); j--) {
        ranked[j + 1] = ranked[j];
      }
      ranked[j + 1] = match;
    }
  }
}
