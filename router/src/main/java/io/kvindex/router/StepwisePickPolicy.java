package io.kvindex.router;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A pick policy made of steps, each leaving some candidates out: {@link #pick} runs them, {@link
 * #verdicts} runs the same steps and says which step left each candidate out.
 */
abstract class StepwisePickPolicy implements PickPolicy {
  @Override
  public final Pick pick(Scores scores, Collection<String> candidates, LoadSignal load) {
    return decide(scores, candidates, load, null);
  }

  @Override
  public final Map<String, Pick.Verdict> verdicts(
      Scores scores, Collection<String> candidates, LoadSignal load) {
    Map<String, Pick.Verdict> out = new LinkedHashMap<>();
    candidates.forEach(pod -> out.put(pod, null));
    decide(scores, candidates, load, out);
    return out;
  }

  /**
   * The policy's steps; each candidate a step leaves out gets that step's verdict in {@code
   * verdicts}, when given (null when only the pick is wanted).
   */
  abstract Pick decide(
      Scores scores,
      Collection<String> candidates,
      LoadSignal load,
      Map<String, Pick.Verdict> verdicts);
}
