package io.kvindex.router;

import io.kvindex.common.Check;

/**
 * The pod a request should go to, and why. Immutable, so thread-safe.
 *
 * @param pod the chosen pod
 * @param reason the policy step that decided
 * @param matchedBlocks the prefix the chosen pod holds, in blocks (zero when unknown)
 * @param speculative whether that match rests on routes not yet confirmed by the engine
 */
public record Pick(String pod, Reason reason, int matchedBlocks, boolean speculative) {

  /** The step of the pick policy that decided. */
  public enum Reason {
    /** The chosen pod held the longest (tier-weighted) prefix among the pods not overloaded. */
    LONGEST_PREFIX,
    /** Several pods held the same prefix (possibly none); the least loaded of them won. */
    LEAST_LOAD,
    /** Pods equal in prefix and load; the deterministic tie-break decided. */
    TIE_BREAK,
    /** The index was unavailable; the least loaded pod won. */
    INDEX_UNAVAILABLE,
    /**
     * The chosen pod had the least estimated time to first token while another pod not overloaded
     * held a prefix at least as long: the work queued there outweighed its cache.
     */
    ESTIMATED_TTFT
  }

  /** What the pick policy made of one candidate. */
  public enum Verdict {
    /** Chosen, for the {@link Pick#reason}. */
    CHOSEN,
    /** Left out by the load-imbalance guard: its load was too far above the least loaded pod's. */
    OVERLOADED,
    /** A pod not overloaded held a longer (tier-weighted) prefix. */
    SHORTER_PREFIX,
    /** Tied on prefix, but a tied pod carried less load. */
    MORE_LOAD,
    /**
     * Not overloaded, but another pod's estimated time to first token (uncached prompt plus the
     * work queued there) was lower.
     */
    SLOWER_ESTIMATE,
    /** Tied on prefix and load; the deterministic tie-break chose another. */
    LOST_TIE_BREAK,
    /** Not chosen, by a policy that does not say why. */
    NOT_CHOSEN
  }

  public Pick {
    Check.notNull(pod, "pod");
    Check.notNull(reason, "reason");
    Check.atLeast(matchedBlocks, 0, "matchedBlocks");
  }
}
