package io.kvindex.epp;

import io.kvindex.router.LoadSignal;
import java.time.Duration;
import java.util.Collection;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;

/**
 * What the picker knows of each endpoint's load: the requests it sent there that are still open
 * (its own in-flight count, exact and current), and what the engine last reported on its {@code
 * /metrics} (waiting and running requests, KV-cache usage: every gateway's requests, but as old as
 * the last scrape). Thread-safe.
 *
 * <p>Implementation notes. The load the pick policy sees is the larger of the two counts: the
 * engine's includes the requests other picker replicas sent (which this one knows of only that
 * way), this picker's own includes those sent since the last scrape. Saturation follows the
 * reference picker's utilization detector: per endpoint the larger of waiting over the queue
 * threshold and KV-cache usage over the KV threshold, averaged over the candidates; an endpoint
 * whose figures are missing or older than the staleness bound counts as saturated (1), unless the
 * engines are not scraped at all, when nothing is known and nothing counts as saturated.
 *
 * <p>The prompt tokens queued on an endpoint ({@link #queuedTokens}, what the time-aware pick
 * policy weighs): the tokens past the predicted cached prefix of this picker's own requests there
 * that have had no first token yet, plus, for the requests the engine reports waiting beyond those
 * (other replicas' and other clients'), whose prompts it does not know, {@code
 * waitingRequestTokens} each. The engine's running requests add nothing: they are past their wait
 * (most of them decoding).
 */
final class LoadBook implements LoadSignal {
  /** The reference picker's defaults: a queue of 5 waiting requests, 80 % of the KV cache. */
  static final double DEFAULT_QUEUE_THRESHOLD = 5;

  static final double DEFAULT_KV_THRESHOLD = 0.8;

  /**
   * Prompt tokens counted for a waiting request of another sender: a 2 500-token prompt with about
   * 60 % of it cached.
   */
  static final double DEFAULT_WAITING_REQUEST_TOKENS = 1024;

  private final Map<String, AtomicInteger> open = new ConcurrentHashMap<>();
  private final Map<String, Queued> queued = new ConcurrentHashMap<>();
  private final EngineLoad engines;
  private final long staleNanos;
  private final double queueThreshold;
  private final double kvThreshold;
  private final double waitingRequestTokens;
  private final LongSupplier nanos;

  /** This picker's requests on one endpoint that have had no first token yet. */
  private static final class Queued {
    int requests;
    long tokens;
  }

  /**
   * @param engines the engines' scraped figures, or null when they are not scraped
   */
  LoadBook(
      EngineLoad engines,
      Duration staleness,
      double queueThreshold,
      double kvThreshold,
      double waitingRequestTokens,
      LongSupplier nanos) {
    this.engines = engines;
    this.staleNanos = staleness.toNanos();
    this.queueThreshold = queueThreshold;
    this.kvThreshold = kvThreshold;
    this.waitingRequestTokens = waitingRequestTokens;
    this.nanos = nanos;
  }

  /** A request went to the endpoint. */
  void opened(String key) {
    open.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
  }

  /** A request the endpoint held has ended (its response finished, or its stream closed). */
  void closed(String key) {
    AtomicInteger n = open.get(key);
    if (n != null) {
      n.updateAndGet(v -> v > 0 ? v - 1 : 0);
    }
  }

  /**
   * A request sent to the endpoint waits for its first token, with {@code tokens} prompt tokens to
   * compute (past the cached prefix predicted there; negative: not known, counted as a waiting
   * request of another sender).
   */
  void queued(String key, long tokens) {
    Queued q = queued.computeIfAbsent(key, k -> new Queued());
    synchronized (q) {
      q.requests++;
      q.tokens += tokens(tokens);
    }
  }

  private long tokens(long tokens) {
    return tokens < 0 ? Math.round(waitingRequestTokens) : tokens;
  }

  /**
   * A request {@link #queued} there has had its first token (or ended without): its prompt is no
   * longer ahead of a new request's.
   */
  void firstToken(String key, long tokens) {
    Queued q = queued.get(key);
    if (q == null) {
      return;
    }
    synchronized (q) {
      q.requests = Math.max(0, q.requests - 1);
      q.tokens = q.requests == 0 ? 0 : Math.max(0, q.tokens - tokens(tokens));
    }
  }

  @Override
  public double queuedTokens(String key) {
    Queued q = queued.get(key);
    int requests = 0;
    long tokens = 0;
    if (q != null) {
      synchronized (q) {
        requests = q.requests;
        tokens = q.tokens;
      }
    }
    EngineStats s = fresh(key);
    double others = s == null ? 0 : Math.max(0, s.waiting() - requests);
    return tokens + others * waitingRequestTokens;
  }

  /** This picker's open requests on the endpoint. */
  int open(String key) {
    AtomicInteger n = open.get(key);
    return n == null ? 0 : n.get();
  }

  /** All of this picker's open requests. */
  int open() {
    return open.values().stream().mapToInt(AtomicInteger::get).sum();
  }

  @Override
  public double load(String key) {
    EngineStats s = fresh(key);
    double engine = s == null ? 0 : s.waiting() + s.running();
    return Math.max(open(key), engine);
  }

  /**
   * The candidates' saturation, as the reference picker's utilization detector computes it: 1 or
   * more means saturated; 0 when the engines are not scraped.
   */
  double saturation(Collection<Endpoint> endpoints) {
    if (engines == null || endpoints.isEmpty()) {
      return 0;
    }
    double sum = 0;
    for (Endpoint e : endpoints) {
      EngineStats s = fresh(e.key());
      sum +=
          s == null ? 1.0 : Math.max(s.waiting() / queueThreshold, s.kvCacheUsage() / kvThreshold);
    }
    return sum / endpoints.size();
  }

  private EngineStats fresh(String key) {
    if (engines == null) {
      return null;
    }
    EngineStats s = engines.stats(key);
    return s == null || nanos.getAsLong() - s.atNanos() > staleNanos ? null : s;
  }
}
