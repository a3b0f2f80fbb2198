package io.kvindex.redis;

import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * Decides whether a failed Redis call is temporary, needs a script reload, or is real. The rules
 * follow lettuce 7.x exception types and the first word of Redis 7 error replies; see {@link
 * ClassifiedError} for the reasons it reports. Implementations are stateless and thread-safe.
 */
public interface RedisErrorClassifier {

  /**
   * Classifies a failure. Never throws; anything it does not recognise is {@link
   * RedisErrorClass#REAL} with reason {@code unknown}.
   *
   * @param failure the exception, possibly wrapped (more than once) in {@link CompletionException}
   *     or {@link ExecutionException}
   */
  ClassifiedError classify(Throwable failure);

  /** The standard rules: OOM is a real (capacity) error. */
  static RedisErrorClassifier standard() {
    return StandardErrorClassifier.STANDARD;
  }

  /**
   * The standard rules, with OOM optionally temporary. Only for a cache-style deployment with an
   * evicting {@code maxmemory-policy}; the index itself must run with {@code noeviction}, where OOM
   * does not clear by itself.
   */
  static RedisErrorClassifier of(boolean oomIsTemporary) {
    return oomIsTemporary
        ? StandardErrorClassifier.OOM_TEMPORARY
        : StandardErrorClassifier.STANDARD;
  }

  /** Removes {@link CompletionException} and {@link ExecutionException} wrappers, however deep. */
  static Throwable unwrap(Throwable failure) {
    Throwable e = failure;
    while ((e instanceof CompletionException || e instanceof ExecutionException)
        && e.getCause() != null
        && e.getCause() != e) {
      e = e.getCause();
    }
    return e;
  }
}
