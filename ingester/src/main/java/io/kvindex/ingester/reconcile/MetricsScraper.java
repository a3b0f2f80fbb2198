package io.kvindex.ingester.reconcile;

import io.kvindex.common.Check;
import io.kvindex.common.Threads;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodySubscriber;
import java.net.http.HttpResponse.BodySubscribers;
import java.net.http.HttpResponse.ResponseInfo;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Flow;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Fetches pods' {@code /metrics} pages, all in parallel, each within its own deadline (request line
 * to the body's last byte) and body cap, so that one slow or huge page costs only its own pod's
 * scrape. Thread-safe.
 *
 * <p>The JDK client's request timeout covers the response's headers only: a page that dribbles its
 * body would hold a scrape for ever. So a timer of the scraper's own cancels the whole exchange at
 * the deadline (cancelling the future of {@code sendAsync} aborts it), and the body subscriber
 * cancels its subscription once the page passes the cap (or at once when its Content-Length says it
 * will), so that nothing past the cap is held.
 */
final class MetricsScraper implements AutoCloseable {
  /** Threads that run the HTTP client's callbacks; its I/O runs on its own selector thread. */
  static final int THREADS = 2;

  /** What one scrape gave. */
  sealed interface Result permits Page, Failed {
    /** The outcome as counted ({@code kvindex_ingester_scrapes_total{outcome}}). */
    String outcome();
  }

  /** The page, read whole within the deadline and the cap. */
  record Page(String text) implements Result {
    @Override
    public String outcome() {
      return "ok";
    }
  }

  /**
   * No page: {@code outcome} is {@code failed} (refused, reset, not 200), {@code timeout} (past the
   * deadline) or {@code too_large} (past the body cap).
   */
  record Failed(String outcome, String why) implements Result {}

  private final Duration timeout;
  private final long maxBytes;
  private final ExecutorService callbacks;
  private final ScheduledExecutorService timers;
  private final HttpClient http;

  MetricsScraper(Duration timeout, long maxBytes) {
    this.timeout = Check.positive(timeout, "timeout");
    this.maxBytes = Check.atLeast(maxBytes, 1, "maxBytes");
    // Callbacks are short; past the queue the client's own thread runs them rather than drop one.
    this.callbacks =
        Threads.bounded(
            "kvindex-ingester-scrape", THREADS, 4096, new ThreadPoolExecutor.CallerRunsPolicy());
    this.timers = Threads.scheduled("kvindex-ingester-scrape-deadline", 1);
    this.http = HttpClient.newBuilder().connectTimeout(timeout).executor(callbacks).build();
  }

  /** Scrapes {@code url}; the future completes by the deadline, never exceptionally. */
  CompletableFuture<Result> scrape(String url) {
    HttpRequest request;
    try {
      request = HttpRequest.newBuilder(URI.create(url)).timeout(timeout).GET().build();
    } catch (IllegalArgumentException e) {
      return CompletableFuture.completedFuture(new Failed("failed", "bad URL: " + e.getMessage()));
    }
    CompletableFuture<HttpResponse<String>> exchange = http.sendAsync(request, this::body);
    ScheduledFuture<?> deadline =
        timers.schedule(() -> exchange.cancel(true), timeout.toNanos(), TimeUnit.NANOSECONDS);
    return exchange.handle(
        (response, error) -> {
          deadline.cancel(false);
          return error == null ? page(response) : failed(error);
        });
  }

  private BodySubscriber<String> body(ResponseInfo info) {
    long declared = info.headers().firstValueAsLong("Content-Length").orElse(-1);
    return new CappedBody(maxBytes, declared);
  }

  private static Result page(HttpResponse<String> response) {
    return response.statusCode() == 200
        ? new Page(response.body())
        : new Failed("failed", "HTTP " + response.statusCode());
  }

  private Result failed(Throwable error) {
    Throwable cause = error;
    while (cause instanceof CompletionException && cause.getCause() != null) {
      cause = cause.getCause();
    }
    if (cause instanceof TooLarge t) {
      return new Failed("too_large", t.getMessage());
    }
    if (cause instanceof CancellationException
        || cause instanceof java.net.http.HttpTimeoutException) {
      return new Failed("timeout", "no whole page within " + timeout.toMillis() + " ms");
    }
    return new Failed("failed", String.valueOf(cause));
  }

  @Override
  public void close() {
    timers.shutdownNow();
    callbacks.shutdownNow();
  }

  /** A page past the body cap. */
  static final class TooLarge extends IOException {
    private static final long serialVersionUID = 1L;

    TooLarge(String message) {
      super(message);
    }
  }

  /**
   * A page as text, refused as soon as it passes {@code maxBytes}: its subscription is cancelled,
   * so the rest is never read.
   */
  static final class CappedBody implements BodySubscriber<String> {
    private final long maxBytes;
    private final long declared;
    private final BodySubscriber<String> text = BodySubscribers.ofString(StandardCharsets.UTF_8);
    private final CompletableFuture<String> result = new CompletableFuture<>();
    private Flow.Subscription subscription;
    private long received;

    CappedBody(long maxBytes, long declared) {
      this.maxBytes = maxBytes;
      this.declared = declared;
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
      subscription = s;
      if (declared > maxBytes) {
        refuse(declared);
        return;
      }
      text.getBody()
          .whenComplete(
              (page, error) -> {
                if (error == null) {
                  result.complete(page);
                } else {
                  result.completeExceptionally(error);
                }
              });
      text.onSubscribe(s);
    }

    @Override
    public void onNext(List<ByteBuffer> items) {
      if (result.isDone()) {
        return;
      }
      for (ByteBuffer b : items) {
        received += b.remaining();
      }
      if (received > maxBytes) {
        refuse(received);
        return;
      }
      text.onNext(items);
    }

    private void refuse(long bytes) {
      subscription.cancel();
      result.completeExceptionally(
          new TooLarge(
              "the page has "
                  + (bytes == declared ? bytes + " bytes" : "more than " + maxBytes + " bytes")
                  + ", over the limit of "
                  + maxBytes
                  + " set by max-scrape-bytes (--max-scrape-bytes, KVINDEX_MAX_SCRAPE_BYTES)"));
    }

    @Override
    public void onError(Throwable t) {
      if (!result.isDone()) {
        text.onError(t);
      }
    }

    @Override
    public void onComplete() {
      if (!result.isDone()) {
        text.onComplete();
      }
    }

    @Override
    public java.util.concurrent.CompletionStage<String> getBody() {
      return result;
    }
  }
}
