package io.kvindex.router;

import io.kvindex.index.redis.KeySchema;
import io.kvindex.redis.RedisConnector;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;

/**
 * The load view every router of a fleet shares through the index: this router's share (per model
 * and pod, the requests it routed that have not ended and their prompt tokens not yet computed),
 * written to the model's {@code spec:load} hash, and the other routers' shares read back. Thread-
 * safe.
 *
 * <p>Implementation notes. Each router writes only its own field of a model's hash, its whole share
 * as absolute values with an expiry by its clock ({@link #encode}), so a write needs no script and
 * a lost or repeated write does no harm; the writes are issued under this object's lock, so Redis
 * applies them in the order the counts changed (one connection, one key, one node). A daemon thread
 * rewrites the fields every third of the TTL (the heartbeat) and deletes what readers found expired
 * for more than a TTL, so the hash holds one field per live router, plus, for a TTL, those of
 * routers that died. A reader skips expired fields: a crashed router's share leaves the view within
 * one TTL. Routers' clocks must agree to well within the TTL.
 *
 * <p>A read is one {@code HGETALL} issued beside a lookup on the same connection (pipelined: the
 * pick's round trip is still one), at most one in flight per model: a lookup that finds one in
 * flight waits on it (issued before its own lookup on the same connection, it answers first), and
 * one that finds the last answer younger than the minimum age reads nothing. The answer's bytes are
 * kept as they came and decoded once, by the first pick that needs them, off Redis's I/O thread.
 * This router's own share comes from memory, so it is always current.
 */
final class SharedLoad implements AutoCloseable {
  private final RedisConnector connector;
  private final KeySchema keys;
  private final String routerId;
  private final byte[] routerIdBytes;
  private final long ttlMillis;
  private final long minAgeNanos;
  private final long budgetMillis;
  private final LongSupplier clockMillis;
  private final ScheduledExecutorService heartbeat;
  private final Counter written;
  private final Counter writesFailed;
  private final Counter reads;
  private final Counter readsFailed;

  /** This router's share: model -> pod -> {requests, tokens}. Guarded by {@code this}. */
  private final Map<String, Map<String, long[]>> own = new HashMap<>();

  /** Per model, the latest read of the others' shares (answered or in flight). */
  private final Map<String, AtomicReference<Read>> latest = new ConcurrentHashMap<>();

  /** Per model, the last view that answered. */
  private final Map<String, View> others = new ConcurrentHashMap<>();

  SharedLoad(
      RedisConnector connector,
      KeySchema keys,
      String routerId,
      Duration ttl,
      Duration minAge,
      Duration budget,
      LongSupplier clockMillis,
      MeterRegistry registry) {
    this.connector = connector;
    this.keys = keys;
    this.routerId = routerId;
    this.routerIdBytes = routerId.getBytes(StandardCharsets.UTF_8);
    this.ttlMillis = ttl.toMillis();
    this.minAgeNanos = minAge.toNanos();
    this.budgetMillis = budget.toMillis();
    this.clockMillis = clockMillis;
    this.written = writes(registry, "written");
    this.writesFailed = writes(registry, "failed");
    this.reads =
        Counter.builder("kvindex.router.shared.load.reads")
            .description(
                "Reads of the shared load view issued (lookups within its minimum age share one)")
            .register(registry);
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

  /**
   * Counts a routed request of {@code tokens} uncached prompt tokens on {@code pod} until its first
   * token (the tokens) and its end (the request).
   */
  InFlight started(String model, String pod, long tokens) {
    add(model, pod, 1, tokens);
    AtomicBoolean prefilled = new AtomicBoolean();
    AtomicBoolean ended = new AtomicBoolean();
    return new InFlight() {
      @Override
      public void firstToken() {
        if (!ended.get() && prefilled.compareAndSet(false, true)) {
          add(model, pod, 0, -tokens);
        }
      }

      @Override
      public void finished() {
        if (ended.compareAndSet(false, true)) {
          add(model, pod, -1, prefilled.getAndSet(true) ? 0 : -tokens);
        }
      }
    };
  }

  /** Adds {@code requests} and {@code tokens} (either may be negative) to this router's share. */
  synchronized void add(String model, String pod, long requests, long tokens) {
    Map<String, long[]> pods = own.computeIfAbsent(model, m -> new HashMap<>());
    long[] share = pods.computeIfAbsent(pod, p -> new long[2]);
    share[0] = Math.max(0, share[0] + requests);
    share[1] = Math.max(0, share[1] + tokens);
    if (share[0] == 0 && share[1] == 0) {
      pods.remove(pod);
    }
    write(model, pods);
  }

  /** Writes this router's field of {@code model}'s hash: its share, or nothing (deleted). */
  private void write(String model, Map<String, long[]> pods) {
    byte[] key = keys.sharedLoad(model);
    if (pods.isEmpty()) {
      count(connector.commands().hdel(key, routerIdBytes).toCompletableFuture());
    } else {
      count(
          connector
              .commands()
              .hset(key, routerIdBytes, encode(clockMillis.getAsLong() + ttlMillis, pods))
              .toCompletableFuture());
      connector.commands().pexpire(key, 2 * ttlMillis);
    }
  }

  /**
   * Reads the others' shares of {@code model} unless a read is in flight (then its answer) or the
   * last answered within the minimum age; completes within the lookup budget whatever Redis does,
   * the last view standing when the read fails or is late.
   */
  CompletableFuture<?> read(String model) {
    AtomicReference<Read> slot = latest.computeIfAbsent(model, m -> new AtomicReference<>());
    long now = System.nanoTime();
    Read last = slot.get();
    if (last != null && (!last.answer.isDone() || now - last.issuedNanos < minAgeNanos)) {
      return late(last.answer);
    }
    Read next = new Read(now, new CompletableFuture<>());
    if (!slot.compareAndSet(last, next)) {
      return late(slot.get().answer); // another lookup issued it meanwhile
    }
    reads.increment();
    connector
        .commands()
        .hgetall(keys.sharedLoad(model))
        .toCompletableFuture()
        .whenComplete(
            (fields, e) -> {
              if (e == null) {
                others.put(model, new View(model, fields));
              } else {
                readsFailed.increment();
              }
              next.answer.complete(null);
            });
    return late(next.answer);
  }

  private CompletableFuture<?> late(CompletableFuture<Void> answer) {
    return answer.isDone()
        ? answer
        : answer.copy().completeOnTimeout(null, budgetMillis, TimeUnit.MILLISECONDS);
  }

  /** The fleet's load for a pick: the others' shares as last read plus this router's own. */
  LoadSignal fleet(String model, LoadSignal caller) {
    View view = others.get(model);
    Map<String, long[]> theirs = view == null ? Map.of() : view.byPod();
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
        return Math.max(0, caller.load(pod)) + at(theirs, pod, 0) + at(mine, pod, 0);
      }

      @Override
      public double queuedTokens(String pod) {
        double given = caller.queuedTokens(pod);
        return (Double.isNaN(given) ? 0 : Math.max(0, given))
            + at(theirs, pod, 1)
            + at(mine, pod, 1);
      }
    };
  }

  private static long at(Map<String, long[]> shares, String pod, int i) {
    long[] share = shares.get(pod);
    return share == null ? 0 : share[i];
  }

  /**
   * One router's field value: {@code u64 expiry ms} then, per pod, {@code u32 name length ‖ name
   * (UTF-8) ‖ u64 requests ‖ u64 tokens}, big-endian.
   */
  static byte[] encode(long expiryMillis, Map<String, long[]> pods) {
    List<byte[]> names = new ArrayList<>(pods.size());
    int size = Long.BYTES;
    for (String pod : pods.keySet()) {
      byte[] name = pod.getBytes(StandardCharsets.UTF_8);
      names.add(name);
      size += Integer.BYTES + name.length + 2 * Long.BYTES;
    }
    ByteBuffer out = ByteBuffer.allocate(size).putLong(expiryMillis);
    int i = 0;
    for (long[] share : pods.values()) {
      byte[] name = names.get(i++);
      out.putInt(name.length).put(name).putLong(share[0]).putLong(share[1]);
    }
    return out.array();
  }

  /**
   * Adds a field's shares to {@code into}; false, adding nothing, for a value this version does not
   * write (another version's, or damaged: left for its writer).
   */
  static boolean decode(byte[] value, Map<String, long[]> into) {
    ByteBuffer in = ByteBuffer.wrap(value, Long.BYTES, value.length - Long.BYTES);
    Map<String, long[]> shares = new HashMap<>();
    while (in.remaining() >= Integer.BYTES) {
      int length = in.getInt();
      if (length < 0 || length > in.remaining() - 2 * Long.BYTES) {
        return false;
      }
      String pod = new String(value, in.position(), length, StandardCharsets.UTF_8);
      in.position(in.position() + length);
      shares.put(pod, new long[] {Math.max(0, in.getLong()), Math.max(0, in.getLong())});
    }
    if (in.hasRemaining()) {
      return false;
    }
    shares.forEach(
        (pod, share) -> {
          long[] sum = into.computeIfAbsent(pod, p -> new long[2]);
          sum[0] += share[0];
          sum[1] += share[1];
        });
    return true;
  }

  /** The heartbeat: every field of this router's share written again with a new expiry. */
  private void rewrite() {
    try {
      synchronized (this) {
        own.forEach(
            (model, pods) -> {
              if (!pods.isEmpty()) {
                write(model, pods);
              }
            });
      }
    } catch (RuntimeException e) {
      writesFailed.increment(); // the next beat tries again
    }
  }

  private void count(CompletableFuture<?> write) {
    write.whenComplete((r, e) -> (e == null ? written : writesFailed).increment());
  }

  /** Stops the heartbeat and leaves the view at once (this router's fields deleted). */
  @Override
  public void close() {
    heartbeat.shutdownNow();
    List<CompletableFuture<?>> leaving = new ArrayList<>();
    synchronized (this) {
      own.forEach(
          (model, pods) ->
              leaving.add(
                  connector
                      .commands()
                      .hdel(keys.sharedLoad(model), routerIdBytes)
                      .toCompletableFuture()));
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

  /** A read of a model's view: when it was issued, and its answer (the view is then in place). */
  private record Read(long issuedNanos, CompletableFuture<Void> answer) {}

  /**
   * The other routers' shares of one model as one read answered them: the raw fields, decoded once
   * by the first pick that asks (which also deletes the long-expired fields).
   */
  private final class View {
    private final String model;
    private final long readAtMillis;
    private Map<byte[], byte[]> fields;
    private volatile Map<String, long[]> byPod;

    View(String model, Map<byte[], byte[]> fields) {
      this.model = model;
      this.readAtMillis = clockMillis.getAsLong();
      this.fields = fields;
    }

    /** Per pod, {requests, tokens} summed over the other routers' unexpired fields. */
    Map<String, long[]> byPod() {
      Map<String, long[]> decoded = byPod;
      if (decoded == null) {
        synchronized (this) {
          decoded = byPod;
          if (decoded == null) {
            decoded = decodeFields();
            byPod = decoded;
            fields = null;
          }
        }
      }
      return decoded;
    }

    private Map<String, long[]> decodeFields() {
      Map<String, long[]> sum = new HashMap<>();
      List<byte[]> stale = new ArrayList<>();
      fields.forEach(
          (field, value) -> {
            if (value.length < Long.BYTES || Arrays.equals(field, routerIdBytes)) {
              return;
            }
            long expiry = ByteBuffer.wrap(value).getLong();
            if (expiry < readAtMillis) {
              if (expiry < readAtMillis - ttlMillis && decode(value, new HashMap<>())) {
                stale.add(field);
              }
              return;
            }
            decode(value, sum);
          });
      if (!stale.isEmpty()) {
        connector.commands().hdel(keys.sharedLoad(model), stale.toArray(new byte[0][]));
      }
      return sum;
    }
  }
}
