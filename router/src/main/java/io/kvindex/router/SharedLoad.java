package io.kvindex.router;

import io.kvindex.index.redis.KeySchema;
import io.kvindex.redis.RedisConnector;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The load view every router of a fleet shares through the index: this router's share (per model
 * and pod, the requests it routed that have not ended and their prompt tokens not yet computed),
 * written to the model's {@code spec:load} hash, and the other routers' shares read back. Thread-
 * safe.
 *
 * <p>Implementation notes. Each router writes only its own fields, as absolute values with an
 * expiry by its clock ({@code <requests>|<tokens>|<expiry ms>}), so a write needs no script and a
 * lost or repeated write does no harm; the writes of one pod's field are issued under this object's
 * lock, so Redis applies them in the order the counts changed (one connection, one key, one node).
 * A daemon thread rewrites the fields every third of the TTL (the heartbeat) and deletes what
 * readers found expired for more than a TTL, so the hash holds at most one field per live router
 * and pod, plus, for a TTL, those of routers that died. A reader skips expired fields: a crashed
 * router's share leaves the view within one TTL. Routers' clocks must agree to well within the TTL.
 * A read is one {@code HGETALL} issued beside the lookup on the same connection (pipelined: the
 * pick's round trip is still one); its answer is this router's view of the others until the next
 * read, and this router's own share comes from memory, so it is always current.
 */
final class SharedLoad implements AutoCloseable {
  private final RedisConnector connector;
  private final KeySchema keys;
  private final String routerId;
  private final byte[] routerIdBytes;
  private final long ttlMillis;
  private final LongSupplier clockMillis;
  private final ScheduledExecutorService heartbeat;
  private final Counter written;
  private final Counter writesFailed;
  private final Counter readsFailed;

  /** This router's share: model -> pod -> {requests, tokens}. Guarded by {@code this}. */
  private final Map<String, Map<String, long[]>> own = new HashMap<>();

  /** The others' shares as last read, per model. */
  private final Map<String, View> others = new ConcurrentHashMap<>();

  SharedLoad(
      RedisConnector connector,
      KeySchema keys,
      String routerId,
      Duration ttl,
      LongSupplier clockMillis,
      MeterRegistry registry) {
    this.connector = connector;
    this.keys = keys;
    this.routerId = routerId;
    this.routerIdBytes = routerId.getBytes(StandardCharsets.UTF_8);
    this.ttlMillis = ttl.toMillis();
    this.clockMillis = clockMillis;
    this.written = writes(registry, "written");
    this.writesFailed = writes(registry, "failed");
    this.readsFailed =
        Counter.builder("kvindex.router.shared.load.reads.failed")
            .description("Reads of the shared load view that failed (the last view stood)")
            .register(registry);
    this.heartbeat =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "kvindex-shared-load-" + routerId);
              t.setDaemon(true);
              return t;
            });
    long period = Math.max(1, ttlMillis / 3);
    heartbeat.scheduleAtFixedRate(this::rewrite, period, period, TimeUnit.MILLISECONDS);
  }

  private static Counter writes(MeterRegistry registry, String outcome) {
    return Counter.builder("kvindex.router.shared.load.writes")
        .description("Writes of this router's share of the shared load view, by outcome")
        .tag("outcome", outcome)
        .register(registry);
  }

  String routerId() {
    return routerId;
  }

  /** Adds {@code requests} and {@code tokens} (either may be negative) to this router's share. */
  synchronized void add(String model, String pod, long requests, long tokens) {
    long[] share =
        own.computeIfAbsent(model, m -> new HashMap<>()).computeIfAbsent(pod, p -> new long[2]);
    share[0] = Math.max(0, share[0] + requests);
    share[1] = Math.max(0, share[1] + tokens);
    byte[] key = keys.sharedLoad(model);
    byte[] field = field(pod, routerIdBytes);
    if (share[0] == 0 && share[1] == 0) {
      own.get(model).remove(pod);
      count(connector.commands().hdel(key, field).toCompletableFuture());
    } else {
      count(connector.commands().hset(key, field, value(share)).toCompletableFuture());
      connector.commands().pexpire(key, 2 * ttlMillis);
    }
  }

  /** Starts reading the others' shares of {@code model}; the view is kept when it answers. */
  CompletableFuture<View> read(String model) {
    return connector
        .commands()
        .hgetall(keys.sharedLoad(model))
        .toCompletableFuture()
        .thenApply(
            fields -> {
              View view = parse(model, fields);
              others.put(model, view);
              return view;
            })
        .exceptionally(
            e -> {
              readsFailed.increment();
              return others.getOrDefault(model, View.EMPTY);
            });
  }

  /** The fleet's load for a pick: the others' shares as last read plus this router's own. */
  LoadSignal fleet(String model, LoadSignal caller) {
    View view = others.getOrDefault(model, View.EMPTY);
    Map<String, long[]> mine;
    synchronized (this) {
      Map<String, long[]> current = own.get(model);
      mine = new HashMap<>();
      if (current != null) {
        current.forEach((pod, share) -> mine.put(pod, share.clone()));
      }
    }
    return new LoadSignal() {
      @Override
      public double load(String pod) {
        long[] m = mine.get(pod);
        return Math.max(0, caller.load(pod)) + view.requests(pod) + (m == null ? 0 : m[0]);
      }

      @Override
      public double queuedTokens(String pod) {
        long[] m = mine.get(pod);
        double given = caller.queuedTokens(pod);
        return (Double.isNaN(given) ? 0 : Math.max(0, given))
            + view.tokens(pod)
            + (m == null ? 0 : m[1]);
      }
    };
  }

  private View parse(String model, Map<byte[], byte[]> fields) {
    long now = clockMillis.getAsLong();
    Map<String, long[]> byPod = new HashMap<>();
    List<byte[]> stale = new ArrayList<>();
    fields.forEach(
        (field, value) -> {
          String[] parts = new String(value, StandardCharsets.US_ASCII).split("\\|");
          ByteBuffer in = ByteBuffer.wrap(field);
          if (parts.length != 3 || field.length < 4) {
            return; // not a share this version writes: skipped, left for its writer
          }
          int length = in.getInt();
          if (length < 0 || length > field.length - 4) {
            return;
          }
          String pod = new String(field, 4, length, StandardCharsets.UTF_8);
          boolean mine =
              field.length - 4 - length == routerIdBytes.length
                  && java.util.Arrays.equals(
                      field, 4 + length, field.length, routerIdBytes, 0, routerIdBytes.length);
          long expiry;
          long[] share = new long[2];
          try {
            share[0] = Long.parseLong(parts[0]);
            share[1] = Long.parseLong(parts[1]);
            expiry = Long.parseLong(parts[2]);
          } catch (NumberFormatException e) {
            return;
          }
          if (expiry < now - ttlMillis) {
            stale.add(field);
          }
          if (mine || expiry < now) {
            return;
          }
          long[] sum = byPod.computeIfAbsent(pod, p -> new long[2]);
          sum[0] += Math.max(0, share[0]);
          sum[1] += Math.max(0, share[1]);
        });
    if (!stale.isEmpty()) {
      connector.commands().hdel(keys.sharedLoad(model), stale.toArray(new byte[0][]));
    }
    return new View(byPod);
  }

  /** The heartbeat: every field of this router's share written again with a new expiry. */
  private void rewrite() {
    try {
      synchronized (this) {
        own.forEach(
            (model, pods) -> {
              if (pods.isEmpty()) {
                return;
              }
              Map<byte[], byte[]> fields = new HashMap<>();
              pods.forEach((pod, share) -> fields.put(field(pod, routerIdBytes), value(share)));
              byte[] key = keys.sharedLoad(model);
              count(connector.commands().hset(key, fields).toCompletableFuture());
              connector.commands().pexpire(key, 2 * ttlMillis);
            });
      }
    } catch (RuntimeException e) {
      writesFailed.increment(); // the next beat tries again
    }
  }

  private void count(CompletableFuture<?> write) {
    write.whenComplete((r, e) -> (e == null ? written : writesFailed).increment());
  }

  private byte[] value(long[] share) {
    long expiry = clockMillis.getAsLong() + ttlMillis;
    return (share[0] + "|" + share[1] + "|" + expiry).getBytes(StandardCharsets.US_ASCII);
  }

  static byte[] field(String pod, byte[] routerId) {
    byte[] name = pod.getBytes(StandardCharsets.UTF_8);
    return ByteBuffer.allocate(4 + name.length + routerId.length)
        .putInt(name.length)
        .put(name)
        .put(routerId)
        .array();
  }

  /** Stops the heartbeat and leaves the view at once (this router's fields deleted). */
  @Override
  public void close() {
    heartbeat.shutdownNow();
    List<CompletableFuture<?>> leaving = new ArrayList<>();
    synchronized (this) {
      own.forEach(
          (model, pods) -> {
            if (!pods.isEmpty()) {
              byte[][] fields =
                  pods.keySet().stream().map(p -> field(p, routerIdBytes)).toArray(byte[][]::new);
              leaving.add(
                  connector.commands().hdel(keys.sharedLoad(model), fields).toCompletableFuture());
            }
          });
      own.clear();
    }
    try {
      CompletableFuture.allOf(leaving.toArray(new CompletableFuture<?>[0]))
          .get(1, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      // the fields expire by themselves within the TTL
    }
  }

  /** Stops the heartbeat without leaving, as a crashed process does (for tests). */
  void abandon() {
    heartbeat.shutdownNow();
  }

  /** The other routers' shares of one model, per pod: {requests, tokens}. Immutable. */
  record View(Map<String, long[]> byPod) {
    static final View EMPTY = new View(Map.of());

    long requests(String pod) {
      long[] s = byPod.get(pod);
      return s == null ? 0 : s[0];
    }

    long tokens(String pod) {
      long[] s = byPod.get(pod);
      return s == null ? 0 : s[1];
    }
  }
}
