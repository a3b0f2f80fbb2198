package io.kvindex.epp;

import io.kvindex.router.LoadSignal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
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
 * waitingRequestTokens} each. Its own are told from the others' by when the engine was scraped:
 * those sent before the scrape that had no first token yet then are in the engine's count, whatever
 * became of them since (a request that has begun since the last scrape is not counted again as
 * another's). The engine's running requests add nothing: they are past their wait (most of them
 * decoding).
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
  private final AtomicLong tickets = new AtomicLong();
  private final EngineLoad engines;
  private final long staleNanos;
  private final double queueThreshold;
  private final double kvThreshold;
  private final double waitingRequestTokens;
  private final LongSupplier nanos;

  /**
   * This picker's requests on one endpoint that wait for their first token, and those that had it
   * since the engine's last scrape (whose figures still count them waiting). Guarded by its own
   * lock.
   */
  private static final class Queued {
    final List<Request> requests = new ArrayList<>();
  }

  /** One request: its ticket, when it was sent, when its first token came (0: not yet), tokens. */
  private static final class Request {
    final long ticket;
    final long sentAt;
    final long tokens;
    long firstAt;

    Request(long ticket, long sentAt, long tokens) {
      this.ticket = ticket;
      this.sentAt = sentAt;
      this.tokens = tokens;
    }
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
   * request of another sender). Returns its ticket, for {@link #firstToken} and {@link #moved}.
   */
  long queued(String key, long tokens) {
    long ticket = tickets.incrementAndGet();
    add(key, new Request(ticket, nanos.getAsLong(), tokens < 0 ? unknownTokens() : tokens));
    return ticket;
  }

  private long unknownTokens() {
    return Math.round(waitingRequestTokens);
  }

  private void add(String key, Request r) {
    EngineStats s = fresh(key);
    Queued q = queued.computeIfAbsent(key, k -> new Queued());
    synchronized (q) {
      q.requests.removeIf(old -> begunBefore(old, s));
      q.requests.add(r);
    }
  }

  /** Whether the request began before the engine's last scrape: no figures count it waiting. */
  private static boolean begunBefore(Request r, EngineStats s) {
    return r.firstAt != 0 && (s == null || r.firstAt < s.atNanos());
  }

  /**
   * The request of {@code ticket}, {@link #queued} there, has had its first token (or ended
   * without): its prompt is no longer ahead of a new request's.
   */
  void firstToken(String key, long ticket) {
    if (engines == null) {
      take(key, ticket, true); // no engine's figures to tell it from
      return;
    }
    Queued q = queued.get(key);
    Request r = take(key, ticket, false);
    if (r != null) {
      synchronized (q) {
        r.firstAt = Math.max(1, nanos.getAsLong());
      }
    }
  }

  /** The request of {@code ticket} there, left in place or ({@code remove}) taken out; or null. */
  private Request take(String key, long ticket, boolean remove) {
    Queued q = queued.get(key);
    if (q == null) {
      return null;
    }
    synchronized (q) {
      for (Iterator<Request> it = q.requests.iterator(); it.hasNext(); ) {
        Request r = it.next();
        if (r.ticket == ticket) {
          if (remove) {
            it.remove();
          }
          return r;
        }
      }
    }
    return null;
  }

  /**
   * A request open on {@code from} was served by {@code to}: its open count moves, and its queued
   * tokens (the request of {@code ticket}) with it.
   */
  void moved(String from, String to, long ticket) {
    closed(from);
    opened(to);
    Request r = take(from, ticket, true);
    if (r != null) {
      add(to, r);
    }
  }

  @Override
  public double queuedTokens(String key) {
    EngineStats s = fresh(key);
    long tokens = 0;
    int waitingAtScrape = 0;
    Queued q = queued.get(key);
    if (q != null) {
      synchronized (q) {
        for (Iterator<Request> it = q.requests.iterator(); it.hasNext(); ) {
          Request r = it.next();
          if (begunBefore(r, s)) {
            it.remove();
            continue;
          }
          if (r.firstAt == 0) {
            tokens += r.tokens;
          }
          if (s != null && r.sentAt <= s.atNanos() && (r.firstAt == 0 || r.firstAt > s.atNanos())) {
            waitingAtScrape++;
          }
        }
      }
    }
    // The engine's waiting requests when it was scraped, less this picker's own waiting then.
    double others = s == null ? 0 : Math.max(0, s.waiting() - waitingAtScrape);
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
