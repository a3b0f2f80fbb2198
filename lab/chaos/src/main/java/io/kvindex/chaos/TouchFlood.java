package io.kvindex.chaos;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.demo.Stack;
import io.kvindex.demo.Workloads;
import io.kvindex.index.ClosedLoopStore;
import io.kvindex.index.redis.KeySchema;
import io.kvindex.simulator.InferenceRequest;
import io.lettuce.core.Limit;
import io.lettuce.core.Range;
import io.lettuce.core.StreamMessage;
import io.lettuce.core.api.sync.RedisCommands;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A flood of {@code /observe} calls, {@value #CALLS_PER_SECOND} a second from {@value #THREADS}
 * threads (unpaced, 4 threads starved the stack's two cores: ingest fell 6 s behind), spread over
 * the routers, for pods whose evictions the index infers, so that each becomes a touch in the pod's
 * touch stream: half of them the run's own prompts claimed cached to their last block (what a lying
 * gateway would say to make the ingesters restore what their models removed), half the longest
 * prompts the routers take, as block keys never stored (each a touch of {@value
 * ClosedLoopStore#MAX_TOUCH_BLOCKS} keys, 128 KiB). Meanwhile each pod's touch stream is read in
 * Redis every 100 ms: its bytes (from its first and last entry ids, {@code <offset>-<size>}), its
 * entries and Redis's {@code used_memory}. After the flood, how long until every stream is empty
 * (read and trimmed by the pods' owners). Not thread-safe: one run.
 */
final class TouchFlood {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int THREADS = 2;
  private static final int CALLS_PER_SECOND = 100;
  private static final int LONG_BODIES_PER_POD = 4;
  private static final Duration SAMPLE_EVERY = Duration.ofMillis(100);
  private static final Duration DRAIN_LIMIT = Duration.ofSeconds(15);

  private final List<URI> routers;
  private final List<String> pods;
  private final List<InferenceRequest> prompts;
  private final RedisCommands<byte[], byte[]> redis;
  private final Map<String, byte[]> touchKeys = new LinkedHashMap<>();
  private final HttpClient http =
      HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(2))
          .build();

  private final AtomicLong sent = new AtomicLong();
  private final AtomicLong refused = new AtomicLong();
  private final AtomicLong blocksWanted = new AtomicLong();
  private final Map<String, Long> maxBytes = new LinkedHashMap<>();
  private final Map<String, Long> maxEntries = new LinkedHashMap<>();
  private long maxUsedMemory;
  private long samples;

  TouchFlood(
      List<URI> routers,
      List<String> pods,
      List<InferenceRequest> prompts,
      RedisCommands<byte[], byte[]> redis,
      String indexName) {
    this.routers = List.copyOf(routers);
    this.pods = List.copyOf(pods);
    this.prompts = List.copyOf(prompts);
    this.redis = redis;
    KeySchema keys = new KeySchema(indexName, 1);
    for (String pod : pods) {
      touchKeys.put(pod, keys.touchesKey(Stack.MODEL, pod));
      maxBytes.put(pod, 0L);
      maxEntries.put(pod, 0L);
    }
  }

  /** Floods for {@code length}, then waits for the streams to drain; writes the figures. */
  void run(Duration length, ObjectNode out) throws InterruptedException {
    long memoryBefore = ChaosProbes.usedMemory(redis);
    maxUsedMemory = memoryBefore;
    List<byte[]> longBodies = new ArrayList<>();
    for (String pod : pods) {
      for (int b = 0; b < LONG_BODIES_PER_POD; b++) {
        longBodies.add(longBody(pod, pods.indexOf(pod) * LONG_BODIES_PER_POD + b));
      }
    }
    long until = System.nanoTime() + length.toNanos();
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      int id = t;
      Thread thread = new Thread(() -> flood(id, until, longBodies), "chaos-touch-flood-" + t);
      thread.setDaemon(true);
      thread.start();
      threads.add(thread);
    }
    while (System.nanoTime() < until) {
      sample();
      TimeUnit.NANOSECONDS.sleep(SAMPLE_EVERY.toNanos());
    }
    for (Thread t : threads) {
      t.join();
    }
    sample();
    long ended = System.nanoTime();
    long drainedAfter = -1;
    while (System.nanoTime() - ended < DRAIN_LIMIT.toNanos()) {
      if (touchKeys.values().stream().allMatch(k -> redis.xlen(k) == 0)) {
        drainedAfter = (System.nanoTime() - ended) / 1_000_000;
        break;
      }
      sample();
      TimeUnit.NANOSECONDS.sleep(SAMPLE_EVERY.toNanos());
    }
    long memoryAfter = ChaosProbes.usedMemory(redis);
    out.put("observe_calls", sent.get());
    out.put("observe_refused", refused.get());
    out.put("observe_answered_blocks_wanted", blocksWanted.get());
    out.put("touch_stream_byte_cap", ClosedLoopStore.MAX_TOUCH_BYTES);
    out.set("touch_stream_bytes_max", JSON.valueToTree(maxBytes));
    out.set("touch_stream_entries_max", JSON.valueToTree(maxEntries));
    out.put("touch_streams_sampled", samples);
    out.put("touch_streams_empty_after_ms", drainedAfter);
    out.put("redis_used_memory_before", memoryBefore);
    out.put("redis_used_memory_peak_growth_bytes", maxUsedMemory - memoryBefore);
    out.put("redis_used_memory_growth_after_drain_bytes", memoryAfter - memoryBefore);
  }

  private void flood(int id, long until, List<byte[]> longBodies) {
    int i = id;
    long interval = 1_000_000_000L * THREADS / CALLS_PER_SECOND;
    long next = System.nanoTime();
    while (System.nanoTime() < until) {
      next += interval;
      long wait = next - System.nanoTime();
      if (wait > 0) {
        try {
          TimeUnit.NANOSECONDS.sleep(wait);
        } catch (InterruptedException e) {
          return;
        }
      }
      URI router = routers.get(i % routers.size());
      String pod = pods.get((i / 2) % pods.size());
      byte[] body;
      try {
        body =
            i % 2 == 0
                ? longBodies.get(i / 2 % longBodies.size())
                : promptBody(pod, prompts.get(i % prompts.size()));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      i += THREADS;
      try {
        HttpResponse<String> r =
            http.send(
                HttpRequest.newBuilder(router.resolve("/observe"))
                    .timeout(Duration.ofSeconds(5))
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofByteArray(body))
                    .build(),
                HttpResponse.BodyHandlers.ofString());
        sent.incrementAndGet();
        if (r.statusCode() != 200) {
          refused.incrementAndGet();
        } else if (r.body().contains("\"blocks_wanted\":true")) {
          blocksWanted.incrementAndGet();
        }
      } catch (IOException e) {
        sent.incrementAndGet();
        refused.incrementAndGet();
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /** Every pod's touch stream in bytes and entries, and Redis's memory, now. */
  private synchronized void sample() {
    samples++;
    maxUsedMemory = Math.max(maxUsedMemory, ChaosProbes.usedMemory(redis));
    touchKeys.forEach(
        (pod, key) -> {
          maxEntries.merge(pod, redis.xlen(key), Math::max);
          List<StreamMessage<byte[], byte[]>> first =
              redis.xrange(key, Range.create("-", "+"), Limit.from(1));
          List<StreamMessage<byte[], byte[]>> last =
              redis.xrevrange(key, Range.create("-", "+"), Limit.from(1));
          if (!first.isEmpty() && !last.isEmpty()) {
            long[] a = offsetAndSize(first.get(0).getId());
            long[] b = offsetAndSize(last.get(0).getId());
            maxBytes.merge(pod, b[0] + b[1] - a[0], Math::max);
          }
        });
  }

  private static long[] offsetAndSize(String id) {
    int dash = id.indexOf('-');
    return new long[] {
      Long.parseLong(id.substring(0, dash)), Long.parseLong(id.substring(dash + 1))
    };
  }

  /** One of the run's prompts on {@code pod}, claimed cached to its last block. */
  private static byte[] promptBody(String pod, InferenceRequest request) throws IOException {
    int[] tokens = request.promptTokens();
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + tokens.length * 7);
    try (JsonGenerator out = JSON.getFactory().createGenerator(bytes)) {
      out.writeStartObject();
      out.writeStringField("model", Stack.MODEL);
      out.writeStringField("pod", pod);
      out.writeNumberField("predicted_blocks", 0);
      out.writeNumberField("prompt_tokens", tokens.length);
      out.writeNumberField("cached_tokens", tokens.length - 1);
      out.writeFieldName("token_ids");
      out.writeArray(tokens, 0, tokens.length);
      out.writeEndObject();
    }
    return bytes.toByteArray();
  }

  /** The longest prompt a router takes, as block keys no engine stored, all claimed cached. */
  private static byte[] longBody(String pod, int seed) {
    int blocks = ClosedLoopStore.MAX_TOUCH_BLOCKS;
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(blocks * 21);
    try (JsonGenerator out = JSON.getFactory().createGenerator(bytes)) {
      out.writeStartObject();
      out.writeStringField("model", Stack.MODEL);
      out.writeStringField("pod", pod);
      out.writeNumberField("predicted_blocks", 0);
      out.writeNumberField("prompt_tokens", blocks * Workloads.BLOCK_SIZE + 1);
      out.writeNumberField("cached_tokens", blocks * Workloads.BLOCK_SIZE);
      out.writeArrayFieldStart("block_keys");
      for (int i = 0; i < blocks; i++) {
        out.writeNumber(0x5EED_0000_0000_0000L + (long) seed * 1_000_003L + i);
      }
      out.writeEndArray();
      out.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }
}
