package io.kvindex.index.redis;

import io.kvindex.index.PrefixIndex;
import java.util.List;

/**
 * The speculative routes a lookup reads (speculate.lua writes them; each field's value a {@link
 * RouteValue}, read in place): by which fields, and what they give each candidate. Thread-safe
 * (stateless).
 */
final class SpeculativeRoutes {
  /**
   * How far ahead of the Redis clock a speculative route's deadline may lie and still count: as far
   * as a route may last, plus a second for this router's estimate of that clock. A deadline further
   * ahead was not written by speculate.lua (a router's Redis user may write spec: keys directly).
   */
  private static final long MAX_ROUTE_AHEAD_MS = PrefixIndex.MAX_SPECULATIVE_TTL.toMillis() + 1000;

  private SpeculativeRoutes() {}

  /**
   * The segment and span fields the prompt's speculative routes are kept by: those of its first
   * {@link RedisPrefixIndex#SPECULATIVE_BLOCKS_PER_ROUTE} blocks.
   */
  static byte[][] fields(Prompt prompt) {
    int n = Prompt.segmentCount(Math.min(prompt.length(), RedisSpeculation.BLOCKS_PER_ROUTE));
    byte[][] fields = new byte[n][];
    for (int k = 0; k < n; k++) {
      fields[k] = prompt.segmentField(k);
    }
    return fields;
  }

  /**
   * Per candidate, the blocks its routes give it (null when no route names one): from each of its
   * routes in the prompt's segment or span k, the segment's head (the field is named after it, and
   * keys are a chain: the same key at a position means the same prefix), then each kept key of the
   * route there that the prompt has too, in order. Routes whose deadline passed ({@code nowMs},
   * Redis clock) count for nothing. The work is one pass over the values read, whatever the prompt
   * or the candidates.
   */
  static int[] depths(List<byte[]> routes, Prompt prompt, CandidateGroup group, long nowMs) {
    int[] depths = null;
    long[] keys = prompt.keys();
    for (int k = 0; k < routes.size(); k++) {
      byte[] v = routes.get(k);
      int start = prompt.segmentStart(k);
      int end = prompt.segmentEnd(k);
      for (int at = 0; v != null && at + RouteValue.ROUTE_HEADER <= v.length; ) {
        int reach = RouteValue.blocksAt(v, at);
        int kept = RouteValue.keysKept(reach);
        int next = RouteValue.next(v, at);
        int c = group.candidateOf(RouteValue.podDigestAt(v, at));
        long deadline = RouteValue.deadlineAt(v, at);
        // A deadline further ahead than any route may last was not written by speculate.lua.
        if (c >= 0
            && deadline >= nowMs
            && deadline <= nowMs + MAX_ROUTE_AHEAD_MS
            && next <= v.length) {
          int depth = start + 1;
          for (int i = 0; i < kept; i++) {
            int pos = start + RouteValue.keptBlock(reach, i);
            if (pos >= end || keys[pos] != RouteValue.keyAt(v, at, i)) {
              break;
            }
            depth = pos + 1;
          }
          if (depths == null) {
            depths = new int[group.size()];
          }
          depths[c] = Math.max(depths[c], depth);
        }
        at = next;
      }
    }
    return depths;
  }
}
