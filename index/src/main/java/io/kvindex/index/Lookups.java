package io.kvindex.index;

import io.kvindex.common.Await;
import io.kvindex.common.Check;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * The router's reads: how much of a prompt each candidate pod holds (one script per index group),
 * which pods are live, and the speculative routes a router records so that lookups see the blocks
 * of a request it just routed before the engine reports them.
 *
 * <p>As in every role of the {@link PrefixIndex}, a method named {@code ...Async} returns a future
 * and never blocks; the others block. Implementations are thread-safe.
 */
public interface Lookups {

  /**
   * The longest a speculative route may count ({@link #speculateAsync}): one minute. The script
   * that records routes refuses a longer one, and lookups ignore entries (routers' Redis users may
   * write them directly) whose deadline lies further ahead than this.
   */
  Duration MAX_SPECULATIVE_TTL = Duration.ofMinutes(1);

  /**
   * Checks the arguments of {@link #speculateAsync} as every implementation takes them; returns
   * whether there is a route to record (the prompt has blocks).
   *
   * @throws IllegalArgumentException or NullPointerException naming what is wrong
   */
  static boolean checkSpeculation(
      String model, KeyMode mode, String pod, long[] blockKeys, Duration ttl) {
    Check.name(model, "model");
    Check.name(pod, "pod");
    Check.notNull(mode, "mode");
    Check.notNull(blockKeys, "blockKeys");
    checkSpeculativeTtl(ttl, "ttl");
    return blockKeys.length > 0;
  }

  /**
   * {@code ttl} if a speculative route may last that long: at least 1 ms, at most {@link
   * #MAX_SPECULATIVE_TTL}.
   *
   * @throws IllegalArgumentException naming {@code name} otherwise
   */
  static Duration checkSpeculativeTtl(Duration ttl, String name) {
    Check.atLeastOneMilli(ttl, name);
    if (ttl.compareTo(MAX_SPECULATIVE_TTL) > 0) {
      throw new IllegalArgumentException(
          name
              + " must be at most "
              + MAX_SPECULATIVE_TTL.toMillis()
              + " ms (the longest a speculative route may count: a route is a hint until the"
              + " engine's own events arrive), got "
              + ttl.toMillis()
              + " ms");
    }
    return ttl;
  }

  /** How much of the prompt each candidate pod holds. */
  default LookupResult lookup(LookupRequest request) {
    return Await.of(lookupAsync(request));
  }

  /** {@link #lookup} without blocking: one script per index group, all in flight at once. */
  CompletableFuture<LookupResult> lookupAsync(LookupRequest request);

  /**
   * How much of the prompt each candidate pod holds, for a hybrid model ({@link
   * CacheLayout#hybrid}): per pod the hit vLLM's coordinator would compute on the pod's cache (its
   * best rank), in blocks of {@code hashBlockSize} tokens, with each cache group's own figure in
   * {@link PodMatch#groupTokens}. The full-attention group is read as {@link #lookupAsync(
   * LookupRequest)} reads a group, the other groups' fields beside it in the same read.
   *
   * @param request the prompt's keys, one per {@code hashBlockSize} tokens ({@link
   *     LookupRequest#cacheGroup} is ignored: the layout names the groups)
   * @param layout the model's groups, scorable ({@link CacheLayout#unscorable(int)} empty)
   * @param hashBlockSize tokens per key of the request
   * @param promptTokens the prompt's tokens: the hit is at most one fewer
   * @throws UnsupportedOperationException if the index cannot score hybrid models
   */
  default CompletableFuture<LookupResult> lookupAsync(
      LookupRequest request, CacheLayout layout, int hashBlockSize, int promptTokens) {
    throw new UnsupportedOperationException(
        "this index does not score hybrid models; use the Redis index");
  }

  /**
   * {@link #lookupAsync(LookupRequest, CacheLayout, int, int)} by a rule made already: the one a
   * model's engines apply when they run a draft model ({@link HybridHit#eagle}), which one-group
   * models need as well.
   *
   * @param rule the model's hit rule, its layout scorable
   * @throws UnsupportedOperationException if the index cannot score hybrid models
   */
  default CompletableFuture<LookupResult> lookupAsync(
      LookupRequest request, HybridHit rule, int promptTokens) {
    if (rule.eagle() != HybridHit.Eagle.OFF) {
      throw new UnsupportedOperationException(
          "this index does not score draft models; use the Redis index");
    }
    return lookupAsync(request, rule.layout(), rule.hashBlockSize(), promptTokens);
  }

  /**
   * {@link #lookupAsync(LookupRequest, HybridHit, int)}, waiting for the answer (decoded on the
   * calling thread, as {@link #lookup(LookupRequest)} is): what a router holding each model's rule
   * calls.
   *
   * @throws UnsupportedOperationException if the index cannot score hybrid models
   */
  default LookupResult lookup(LookupRequest request, HybridHit rule, int promptTokens) {
    return Await.of(lookupAsync(request, rule, promptTokens));
  }

  /**
   * {@link #lookupAsync(LookupRequest, CacheLayout, int, int)}, waiting for the answer (decoded on
   * the calling thread, as {@link #lookup(LookupRequest)} is).
   *
   * @throws UnsupportedOperationException if the index cannot score hybrid models
   */
  default LookupResult lookup(
      LookupRequest request, CacheLayout layout, int hashBlockSize, int promptTokens) {
    return Await.of(lookupAsync(request, layout, hashBlockSize, promptTokens));
  }

  /** Blocks one speculative route records at most: its prompt's first. */
  int MAX_ROUTE_BLOCKS = 1024;

  /**
   * Records that a request whose prompt has {@code blockKeys} was routed to {@code pod}: lookups of
   * the pod while it is live see the blocks their prompt shares with the route on it (as GPU
   * blocks, flagged {@link PodMatch#speculative()}) before the engine reports them. The blocks
   * credited are exact to within 15: in each segment (16 blocks up to block 256) or span (256
   * blocks) of the route, its head, then its blocks at each multiple of 16 and its last, as far as
   * the prompt has the same keys there. A route lives {@code ttl}, enforced by Redis itself (the
   * routes carry a PEXPIRE), so routes vanish even if every router dies. Confirmed entries
   * supersede them: a block the pod's engine reported is not speculative. A route records its first
   * {@value #MAX_ROUTE_BLOCKS} blocks at most, and only for a pod with a live record; an index
   * keeps a bounded number of routes per group (the latest few pods per segment, the segments whose
   * routes expire last), so routes to made-up pods cost nothing and floods cost a bounded amount.
   *
   * @param blockKeys the prompt's block keys (read, never kept)
   * @param ttl how long the route counts, 1 ms to {@link #MAX_SPECULATIVE_TTL}
   * @return true if recorded (or empty), false if the pod has no live record or Redis was
   *     unavailable (best effort; nothing to heal)
   */
  CompletableFuture<Boolean> speculateAsync(
      String model, KeyMode mode, String pod, long[] blockKeys, int cacheGroup, Duration ttl);

  /**
   * The pod records of {@code pods} as the index holds them now, for explaining a lookup: whether
   * each pod has one and whether it is live. One read per index group; not for the request path.
   *
   * @return per pod, in the order given; empty if Redis did not answer
   */
  CompletableFuture<Optional<List<PodLiveness>>> livenessAsync(String model, List<String> pods);

  /**
   * The pods of {@code model} that are live now (their liveness deadline has not passed), in no
   * particular order: the candidates of a router that was not told its pods. One script per index
   * group, whose cost grows with the number of pods in the group; the Redis index reuses what it
   * read for a second, so a pod may join or leave the list up to a second late.
   *
   * @return the pod names, or empty if Redis stayed unavailable for some group within the lookup
   *     budget
   */
  CompletableFuture<Optional<List<String>>> livePodsAsync(String model);
}
