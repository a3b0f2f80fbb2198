package io.kvindex.epp;

import io.kvindex.index.PodMatch;
import io.kvindex.router.KvRouter;
import io.kvindex.router.Observation;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Closes the loop for one response: the usage its engine reported, observed against what the pick
 * predicted for the endpoint that served it; or why it could not be. Stateless.
 */
final class UsageObservation {
  private static final Logger log = LoggerFactory.getLogger(UsageObservation.class);

  private UsageObservation() {}

  /**
   * Observes the response's usage with the router; returns what became of it ({@code observed},
   * {@code no_usage}, {@code too_large}, {@code unscored}, {@code batch}, {@code
   * index_unavailable}, {@code no_cached_tokens}, {@code invalid}).
   *
   * @param usage the response body's reader, or null when no body was seen
   */
  static String observe(KvRouter router, Decision decision, Endpoint served, UsageReader usage) {
    UsageReader.Usage u = usage == null ? null : usage.finish();
    if (u == null) {
      return usage != null && usage.overflowed() ? "too_large" : "no_usage";
    }
    if (decision.scores() == null) {
      return "unscored";
    }
    if (decision.prompts() > 1) {
      return "batch";
    }
    if (!decision.scores().indexAvailable()) {
      return "index_unavailable";
    }
    if (u.cachedTokens() < 0) {
      return "no_cached_tokens";
    }
    if (u.promptTokens() < 1 || u.cachedTokens() > u.promptTokens()) {
      return "invalid";
    }
    Optional<PodMatch> match = decision.scores().pod(served.pod());
    int predicted = match.map(PodMatch::depth).orElse(0);
    int rank = served.key().equals(served.pod()) ? -1 : served.rank();
    int error =
        router.observe(
            new Observation(
                decision.model(),
                served.pod(),
                predicted,
                u.promptTokens(),
                u.cachedTokens(),
                decision.scores().blockKeys(),
                rank,
                match.map(PodMatch::speculative).orElse(false)));
    if (error != 0 && log.isDebugEnabled()) {
      log.debug(
          "{}-predicted on {}: {} blocks predicted (speculative: {}), the engine reported {} of {}"
              + " prompt tokens cached; picked {}",
          error > 0 ? "over" : "under",
          served.pod(),
          predicted,
          match.map(PodMatch::speculative).orElse(false),
          u.cachedTokens(),
          u.promptTokens(),
          decision.primary().pod());
    }
    return "observed";
  }
}
