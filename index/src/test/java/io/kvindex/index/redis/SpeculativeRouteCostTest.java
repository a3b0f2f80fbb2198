package io.kvindex.index.redis;

import static io.kvindex.index.Events.batch;
import static io.kvindex.index.Events.stored;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.Connectors;
import io.kvindex.index.Events;
import io.kvindex.index.KeyMode;
import io.kvindex.index.LookupRequest;
import io.kvindex.index.LookupResult;
import io.kvindex.index.PodMatch;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What speculative routes cost Redis: a lookup reads them with one HMGET of its own segment fields
 * beside the HMGET of the blocks, whatever the routes, the prompt's length or the candidates; and
 * routes to pods that do not exist, or floods of routes to one that does, hold a bounded amount.
 * Redis's time for the worst request is printed (SLOWLOG), never asserted: the machine is noisy.
 */
@UsesRedis
class SpeculativeRouteCostTest {
  private static final String MODEL = "m";
  private static final Duration TTL = PrefixIndex.MAX_SPECULATIVE_TTL;

  /** The scoring service's default limits: block keys and candidates one request may carry. */
  private static final int MAX_BLOCK_KEYS = 1 << 14;

  private static final int MAX_CANDIDATES = 1024;

  private RedisClient client;
  private StatefulRedisConnection<byte[], byte[]> connection;
  private RedisCommands<byte[], byte[]> redis;
  private RedisConnector connector;
  private PrefixIndex index;

  @BeforeEach
  void connect(RedisStandalone server) {
    client = RedisClient.create(server.uri());
    connection = client.connect(ByteArrayCodec.INSTANCE);
    redis = connection.sync();
    connector = Connectors.connect(server, new SimpleMeterRegistry());
    index =
        PrefixIndex.builder()
            .indexName("cost")
            .podTtl(Duration.ofHours(1))
            .redis(connector)
            .lookupPolicy(RetryPolicy.defaults())
            .build();
  }

  @AfterEach
  void disconnect() {
    redis.configSet("slowlog-log-slower-than", "10000");
    index.close();
    connector.close();
    connection.close();
    client.shutdown();
  }

  /**
   * The worst request the scoring service's limits allow: 16 384 block keys, 1 024 candidates, and
   * a route of that prompt recorded for every candidate. With the candidates' records cached, the
   * lookup is two HMGETs sent together (blocks: the header, the first block and 79 segments and
   * spans; routes: the 19 segments and spans routes are kept by), no script, and it credits the
   * routes.
   */
  @Test
  void lookup_worstAllowedRequestWithRoutesForEveryCandidate_isTwoBoundedHmgets() {
    long[] prompt = Events.keys(1, MAX_BLOCK_KEYS);
    List<String> pods = new ArrayList<>();
    for (int i = 0; i < MAX_CANDIDATES; i++) {
      pods.add("pod-" + i);
      assertThat(index.heartbeat(MODEL, "pod-" + i, TTL)).isTrue();
    }
    StreamId holder = StreamId.of(MODEL, "pod-0");
    index.apply(
        holder,
        Events.mode(holder),
        0,
        index.acquireLease(holder, "owner", TTL).orElseThrow(),
        batch(stored(Events.hashes(1, 4096), null, null)));
    for (String pod : pods) {
      assertThat(index.speculateAsync(MODEL, KeyMode.ENGINE, pod, prompt, 0, TTL).join()).isTrue();
    }
    LookupRequest request =
        LookupRequest.of(MODEL, KeyMode.ENGINE, Arrays.stream(prompt).boxed().toList(), pods);
    LookupResult cold = index.lookup(request); // reads and caches the 1 024 records
    assertThat(cold.pods().get("pod-0").depth()).isEqualTo(4096);
    index.lookup(request);

    redis.configSet("slowlog-log-slower-than", "0");
    redis.configSet("slowlog-max-len", "1024");
    redis.slowlogReset();
    LookupResult warm = index.lookup(request);
    List<Logged> logged = logged();
    redis.configSet("slowlog-log-slower-than", "10000");

    // Every command on the index's keys but the clock's occasional TIME (on the meta key).
    List<Logged> reads =
        logged.stream()
            .filter(l -> l.key().contains("{cost/") && !l.key().endsWith(":meta"))
            .toList();
    assertThat(reads).extracting(Logged::command).containsExactly("HMGET", "HMGET");
    Logged blocks = reads.stream().filter(l -> l.key().endsWith(":blocks")).findFirst().get();
    Logged routes = reads.stream().filter(l -> l.key().endsWith(":spec:routes")).findFirst().get();
    assertThat(blocks.fields()).isEqualTo(3 + 1 + Prompt.segmentCount(MAX_BLOCK_KEYS));
    assertThat(routes.fields()).isEqualTo(Prompt.segmentCount(PrefixIndex.MAX_ROUTE_BLOCKS));
    // each segment keeps the routes of its latest pods
    PodMatch routed = warm.pods().get("pod-" + (MAX_CANDIDATES - 1));
    assertThat(routed.depth()).isEqualTo(PrefixIndex.MAX_ROUTE_BLOCKS);
    assertThat(routed.speculative()).isTrue();
    assertThat(warm.pods().get("pod-0").depth()).isEqualTo(4096);
    System.out.printf(
        "worst allowed lookup (%d block keys, %d candidates, routes for each): Redis time"
            + " blocks HMGET %d µs (%d fields), routes HMGET %d µs (%d fields)%n",
        MAX_BLOCK_KEYS,
        MAX_CANDIDATES,
        blocks.micros(),
        blocks.fields(),
        routes.micros(),
        routes.fields());
  }

  /**
   * Scores and routes naming pods that do not exist, as an HTTP client may send them: nothing is
   * kept for them, so Redis's memory stays where it was.
   */
  @Test
  void speculate_madeUpPods_keepsNothing() {
    long keysBefore = redis.dbsize();
    long before = usedMemory();
    for (int i = 0; i < 5000; i++) {
      String pod = "made-up-" + i;
      long[] prompt = Events.keys(i * 100_000L, 64);
      LookupRequest request =
          LookupRequest.of(
              MODEL, KeyMode.ENGINE, Arrays.stream(prompt).boxed().toList(), List.of(pod));
      assertThat(index.lookup(request).pods().get(pod).depth()).isZero();
      assertThat(index.speculateAsync(MODEL, KeyMode.ENGINE, pod, prompt, 0, TTL).join()).isFalse();
    }
    assertThat(redis.dbsize()).isEqualTo(keysBefore);
    long grown = usedMemory() - before;
    System.out.printf("used_memory after 5 000 made-up routes: %+d bytes%n", grown);
    assertThat(grown).isLessThan(1 << 20);
  }

  /** A flood of routes of distinct prompts to a live pod: the group keeps a bounded number. */
  @Test
  void speculate_floodOfDistinctRoutes_boundedFieldsPerGroup() {
    assertThat(index.heartbeat(MODEL, "p", TTL)).isTrue();
    int routes = RedisSpeculation.FIELDS_PER_GROUP / 19 + 100;
    for (int i = 0; i < routes; i++) {
      long[] prompt = Events.keys(1L + i * 10_000L, PrefixIndex.MAX_ROUTE_BLOCKS);
      assertThat(index.speculateAsync(MODEL, KeyMode.ENGINE, "p", prompt, 0, TTL).join()).isTrue();
    }
    KeySchema keys = new KeySchema("cost", 1);
    assertThat(redis.zcard(keys.speculativeOrder(0))).isEqualTo(RedisSpeculation.FIELDS_PER_GROUP);
    assertThat(redis.hlen(keys.speculativeRoutes(0)))
        .as("and the field that keeps the hash a hashtable")
        .isEqualTo(RedisSpeculation.FIELDS_PER_GROUP + 1);
    long[] latest = Events.keys(1L + (routes - 1) * 10_000L, PrefixIndex.MAX_ROUTE_BLOCKS);
    assertThat(
            index
                .lookup(
                    LookupRequest.of(
                        MODEL,
                        KeyMode.ENGINE,
                        Arrays.stream(latest).boxed().toList(),
                        List.of("p")))
                .pods()
                .get("p")
                .depth())
        .as("the latest route stands")
        .isEqualTo(PrefixIndex.MAX_ROUTE_BLOCKS);
  }

  /** Routes of many pods through one segment: its value names the latest few only. */
  @Test
  void speculate_manyPodsThroughOneSegment_keepsTheLatestFew() {
    long[] prompt = Events.keys(1, 16);
    for (int i = 0; i < 3 * RedisSpeculation.PODS_PER_FIELD; i++) {
      assertThat(index.heartbeat(MODEL, "pod-" + i, TTL)).isTrue();
      assertThat(index.speculateAsync(MODEL, KeyMode.ENGINE, "pod-" + i, prompt, 0, TTL).join())
          .isTrue();
    }
    KeySchema keys = new KeySchema("cost", 1);
    List<byte[]> fields =
        redis.hkeys(keys.speculativeRoutes(0)).stream().filter(f -> f.length == 20).toList();
    assertThat(fields).hasSize(1);
    byte[] value = redis.hget(keys.speculativeRoutes(0), fields.get(0));
    assertThat(value).hasSize(RedisSpeculation.PODS_PER_FIELD * (16 + 8));
  }

  private record Logged(String command, String key, int fields, long micros) {}

  private static final Pattern MORE = Pattern.compile("\\.\\.\\. \\((\\d+) more arguments\\)");

  /** The slow log, oldest first: each command, its key, its arguments after the key, its time. */
  private List<Logged> logged() {
    List<Logged> out = new ArrayList<>();
    for (Object entry : redis.slowlogGet(1024)) {
      List<?> e = (List<?>) entry;
      List<?> args = (List<?>) e.get(3);
      String command = text(args.get(0)).toUpperCase(java.util.Locale.ROOT);
      String key = args.size() > 1 ? text(args.get(1)) : "";
      int fields = args.size() - 2;
      Matcher more = MORE.matcher(text(args.get(args.size() - 1)));
      if (more.matches()) {
        fields = args.size() - 3 + Integer.parseInt(more.group(1));
      }
      out.add(0, new Logged(command, key, fields, (Long) e.get(2)));
    }
    return out;
  }

  private static String text(Object bytes) {
    return new String((byte[]) bytes, StandardCharsets.ISO_8859_1);
  }

  private long usedMemory() {
    Matcher m = Pattern.compile("used_memory:(\\d+)").matcher(redis.info("memory"));
    assertThat(m.find()).isTrue();
    return Long.parseLong(m.group(1));
  }
}
