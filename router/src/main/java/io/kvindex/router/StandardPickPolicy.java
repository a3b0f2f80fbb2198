package io.kvindex.router;

import io.kvindex.index.PodMatch;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

/** The documented default of {@link PickPolicy#standard}. Immutable, so thread-safe. */
final class StandardPickPolicy extends StepwisePickPolicy {
  private final double imbalanceAbsolute;
  private final double imbalanceRatio;

  StandardPickPolicy(double imbalanceAbsolute, double imbalanceRatio) {
    this.imbalanceAbsolute = imbalanceAbsolute;
    this.imbalanceRatio = imbalanceRatio;
  }

  @Override
  Pick decide(
      Scores scores,
      Collection<String> candidates,
      LoadSignal load,
      Map<String, Pick.Verdict> verdicts) {
    List<Candidate> all = candidates(scores, candidates, load);
    Step step = new Step(verdicts);
    if (!scores.indexAvailable()) {
      List<Candidate> leastLoaded = step.keep(all, leastLoaded(all), Pick.Verdict.MORE_LOAD);
      Candidate best = tieBreak(leastLoaded, scores.affinityKey());
      step.keep(leastLoaded, List.of(best), Pick.Verdict.LOST_TIE_BREAK);
      return step.chosen(new Pick(best.pod, Pick.Reason.INDEX_UNAVAILABLE, 0, false));
    }
    List<Candidate> guarded = step.keep(all, withoutOverloaded(all), Pick.Verdict.OVERLOADED);
    List<Candidate> tied = step.keep(guarded, longestPrefix(guarded), Pick.Verdict.SHORTER_PREFIX);
    if (tied.size() == 1) {
      return step.chosen(pick(tied.get(0), Pick.Reason.LONGEST_PREFIX));
    }
    List<Candidate> leastLoaded = step.keep(tied, leastLoaded(tied), Pick.Verdict.MORE_LOAD);
    if (leastLoaded.size() == 1) {
      return step.chosen(pick(leastLoaded.get(0), Pick.Reason.LEAST_LOAD));
    }
    Candidate best = tieBreak(leastLoaded, tieKey(scores, leastLoaded.get(0).score.depth()));
    step.keep(leastLoaded, List.of(best), Pick.Verdict.LOST_TIE_BREAK);
    return step.chosen(pick(best, Pick.Reason.TIE_BREAK));
  }

  /** Records, when asked, the verdict of each candidate a step leaves out. */
  private record Step(Map<String, Pick.Verdict> verdicts) {
    List<Candidate> keep(List<Candidate> before, List<Candidate> after, Pick.Verdict left) {
      if (verdicts != null) {
        for (Candidate c : before) {
          if (!after.contains(c)) {
            verdicts.put(c.pod, left);
          }
        }
      }
      return after;
    }

    Pick chosen(Pick pick) {
      if (verdicts != null) {
        verdicts.put(pick.pod(), Pick.Verdict.CHOSEN);
      }
      return pick;
    }
  }

  private static Pick pick(Candidate c, Pick.Reason reason) {
    return new Pick(c.pod, reason, c.score.depth(), c.score.speculative());
  }

  /** Rejects an empty candidate list or one that repeats a pod. */
  static void check(Collection<String> pods) {
    if (pods.isEmpty()) {
      throw new IllegalArgumentException(
          "candidates must not be empty: pass the pods to pick from");
    }
    if (new HashSet<>(pods).size() != pods.size()) {
      throw new IllegalArgumentException("candidates must not repeat a pod, got " + pods);
    }
  }

  /**
   * The candidates the overload guard keeps, in order: those not above both {@code min + absolute}
   * and {@code min * ratio}, {@code min} being the least load among them.
   */
  static List<String> notOverloaded(
      Collection<String> pods, LoadSignal load, double absolute, double ratio) {
    Map<String, Double> loads = new LinkedHashMap<>();
    pods.forEach(
        p -> {
          double l = load.load(p);
          loads.put(p, l > 0 ? l : 0.0);
        });
    double min = loads.values().stream().mapToDouble(Double::doubleValue).min().orElse(0.0);
    List<String> out = new ArrayList<>(pods.size());
    loads.forEach(
        (p, l) -> {
          if (!(l > min + absolute && l > min * ratio)) {
            out.add(p);
          }
        });
    return out;
  }

  private static List<Candidate> candidates(
      Scores scores, Collection<String> pods, LoadSignal load) {
    check(pods);
    Map<String, PodMatch> byPod =
        scores.pods().stream().collect(Collectors.toMap(PodMatch::pod, Function.identity()));
    List<Candidate> out = new ArrayList<>(pods.size());
    for (String pod : pods) {
      double l = load.load(pod);
      out.add(new Candidate(pod, byPod.getOrDefault(pod, PodMatch.none(pod)), l > 0 ? l : 0.0));
    }
    return out;
  }

  private List<Candidate> withoutOverloaded(List<Candidate> all) {
    double min = all.stream().mapToDouble(c -> c.load).min().orElse(0.0);
    List<Candidate> out = new ArrayList<>(all.size());
    for (Candidate c : all) {
      boolean overloaded = c.load > min + imbalanceAbsolute && c.load > min * imbalanceRatio;
      if (!overloaded) {
        out.add(c);
      }
    }
    return out;
  }

  private static List<Candidate> longestPrefix(List<Candidate> pods) {
    Candidate best = pods.get(0);
    for (Candidate c : pods) {
      if (c.betterPrefixThan(best)) {
        best = c;
      }
    }
    List<Candidate> out = new ArrayList<>();
    for (Candidate c : pods) {
      if (!best.betterPrefixThan(c)) {
        out.add(c);
      }
    }
    return out;
  }

  private static List<Candidate> leastLoaded(List<Candidate> pods) {
    double min = pods.stream().mapToDouble(c -> c.load).min().orElse(0.0);
    return pods.stream().filter(c -> c.load == min).collect(Collectors.toList());
  }

  /**
   * What the tie-break hashes: the prompt's first block when the tied pods hold nothing of it (a
   * miss), else the first block past what they hold, mixed with the first block. Prompts that share
   * a prefix every tied pod holds (a system prompt, a common first block) then spread by what
   * follows it, where hashing the first block alone sent them all to one pod until the overload
   * guard moved them; the same prompt still goes to the same pod.
   */
  private static long tieKey(Scores scores, int depth) {
    long[] keys = scores.blockKeys();
    if (depth <= 0 || keys.length == 0) {
      return scores.affinityKey();
    }
    return scores.affinityKey() ^ mix(keys[Math.min(depth, keys.length - 1)] + 0x632BE59BD9B4E019L);
  }

  /** Rendezvous (highest random weight) hashing of the prompt's affinity key and the pod name. */
  private static Candidate tieBreak(List<Candidate> pods, long affinity) {
    Candidate best = null;
    long bestWeight = 0;
    for (Candidate c : pods) {
      long weight = mix(affinity ^ mix(c.pod.hashCode() * 0x9E3779B97F4A7C15L));
      if (best == null
          || Long.compareUnsigned(weight, bestWeight) > 0
          || (weight == bestWeight && c.pod.compareTo(best.pod) < 0)) {
        best = c;
        bestWeight = weight;
      }
    }
    return best;
  }

  /** SplitMix64's finaliser: a fast, well-spread 64-bit mix. */
  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  private static final class Candidate {
    final String pod;
    final PodMatch score;
    final double load;

    Candidate(String pod, PodMatch score, double load) {
      this.pod = pod;
      this.score = score;
      this.load = load;
    }

    boolean betterPrefixThan(Candidate other) {
      int byScore = Double.compare(score.score(), other.score.score());
      return byScore != 0 ? byScore > 0 : score.depth() > other.score.depth();
    }
  }
}
