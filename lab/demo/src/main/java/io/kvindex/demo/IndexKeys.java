package io.kvindex.demo;

import io.kvindex.index.redis.KeySchema;
import io.kvindex.redis.RedisCalls;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RedisOutcome;
import io.kvindex.redis.RetryPolicy;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every key of one index on a Redis the demo was given, found by a SCAN of each primary that holds
 * data now ({@link RedisConnector#primaries()}: on a cluster, read again from the live topology, so
 * a primary lost for good is not asked) and deleted with UNLINK. A pass that fails on a node starts
 * again on the topology as it is then (a failover may be under way), up to {@value #PASSES} passes
 * on a cluster; each call is retried under the default policy. Not thread-safe: one thread.
 */
final class IndexKeys {
  /** Passes over the primaries before giving up, on a cluster. */
  static final int PASSES = 3;

  private static final Logger log = LoggerFactory.getLogger(IndexKeys.class);
  private static final String OPERATION = "demo_cleanup";
  private static final int PAGE = 500;

  private final RedisConnector connector;
  private final String pattern;
  private final RedisCalls calls;
  private List<RedisConnector.Node> lastPrimaries = List.of();

  IndexKeys(RedisConnector connector, String indexName) {
    this.connector = connector;
    this.pattern = KeySchema.keyPattern(indexName);
    this.calls = connector.calls(RetryPolicy.defaults());
  }

  /**
   * Deletes every key of the index, and says what it did, and on a failure what to run by hand,
   * instead of throwing: a run's figures stand whatever happens to its cleanup.
   */
  Stack.Cleanup cleanUp() {
    Stack.Cleanup cleanup;
    try {
      cleanup = Stack.Cleanup.deleted(delete());
    } catch (DemoException e) {
      cleanup = Stack.Cleanup.failed(e.getMessage());
    } catch (RuntimeException e) {
      cleanup =
          Stack.Cleanup.failed(
              "could not delete the demo's keys in Redis ("
                  + e.getMessage()
                  + "); delete them with: "
                  + command());
    }
    if (cleanup.failed()) {
      log.warn("kvindex demo: {}", cleanup.problem());
    }
    return cleanup;
  }

  /**
   * Deletes every key of the index; returns how many were deleted.
   *
   * @throws DemoException if Redis kept failing; its message says what to run by hand
   */
  long delete() {
    return passes(true);
  }

  private long passes(boolean delete) {
    int passes = connector.isCluster() ? PASSES : 1;
    for (int pass = 1; ; pass++) {
      try {
        return pass(delete);
      } catch (Failed e) {
        if (pass >= passes) {
          throw new DemoException(
              "could not "
                  + (delete ? "delete" : "count")
                  + " the demo's keys in Redis ("
                  + e.getMessage()
                  + "); delete them with: "
                  + command());
        }
      }
    }
  }

  private long pass(boolean delete) {
    lastPrimaries = done(calls.callAndWait(OPERATION, connector::primaries), "the primaries");
    long keys = 0;
    for (RedisConnector.Node node : lastPrimaries) {
      keys += sweep(node, delete);
    }
    return keys;
  }

  /** One node's keys of the index, SCAN page by page, each page unlinked if asked. */
  private long sweep(RedisConnector.Node node, boolean delete) {
    byte[] match = pattern.getBytes(StandardCharsets.UTF_8);
    ScanArgs args = ScanArgs.Builder.matches(match).limit(PAGE);
    long keys = 0;
    ScanCursor cursor = ScanCursor.INITIAL;
    do {
      ScanCursor from = cursor;
      KeyScanCursor<byte[]> page =
          done(
              calls.callAndWait(OPERATION, () -> node.commands().scan(from, args)), node.address());
      for (byte[] key : page.getKeys()) {
        if (delete) {
          done(calls.callAndWait(OPERATION, () -> node.commands().unlink(key)), node.address());
        }
        keys++;
      }
      cursor = page;
    } while (!cursor.isFinished());
    return keys;
  }

  /**
   * What to run by hand: per primary known last (every primary of the cluster if none was), a scan
   * of that node and an UNLINK of each key it lists (keys of different slots cannot share one call
   * on a cluster).
   */
  String command() {
    String quoted = "'" + pattern + "'";
    if (!connector.isCluster()) {
      String at = lastPrimaries.isEmpty() ? "" : options(lastPrimaries.get(0).address());
      return String.format(
          Locale.ROOT,
          "redis-cli%s --scan --pattern %s | xargs redis-cli%s unlink",
          at,
          quoted,
          at);
    }
    if (lastPrimaries.isEmpty()) {
      return "on each primary of the cluster, redis-cli -h HOST -p PORT --scan --pattern "
          + quoted
          + " | xargs -n 1 redis-cli -h HOST -p PORT unlink";
    }
    return lastPrimaries.stream()
        .map(
            n ->
                String.format(
                    Locale.ROOT,
                    "redis-cli%s --scan --pattern %s | xargs -n 1 redis-cli%s unlink",
                    options(n.address()),
                    quoted,
                    options(n.address())))
        .collect(Collectors.joining("; "));
  }

  /** {@code -h host -p port} for a host:port address, nothing for a name. */
  private static String options(String address) {
    int colon = address.lastIndexOf(':');
    if (colon < 0 || address.contains(" ")) {
      return "";
    }
    return " -h " + address.substring(0, colon) + " -p " + address.substring(colon + 1);
  }

  private static <T> T done(RedisOutcome<T> outcome, String where) {
    if (outcome instanceof RedisOutcome.Done<T> done) {
      return done.value();
    }
    throw new Failed(where + ": " + outcome);
  }

  /** A call that kept failing in one pass. */
  private static final class Failed extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Failed(String message) {
      super(message, null, false, false);
    }
  }
}
