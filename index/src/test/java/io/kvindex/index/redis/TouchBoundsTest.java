package io.kvindex.index.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.Connectors;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.index.Touches;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.StreamMessage;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What a pod's touches cost Redis: bounded in bytes whatever routers send, trimmed to what the
 * readers have read, and read in pieces of bounded size.
 */
@UsesRedis
class TouchBoundsTest {
  private static final String MODEL = "m";
  private static final String POD = "p";
  private static final Duration TTL = Duration.ofMinutes(1);
  private static final KeySchema KEYS = new KeySchema("t", 1);

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
            .indexName("t")
            .redis(connector)
            .lookupPolicy(RetryPolicy.defaults())
            .build();
  }

  @AfterEach
  void disconnect() {
    index.close();
    connector.close();
    connection.close();
    client.shutdown();
  }

  /** The bytes of block keys the pod's touch stream holds, read entry by entry. */
  private long keyBytes() {
    long bytes = 0;
    for (StreamMessage<byte[], byte[]> m : redis.xrange(KEYS.touches(MODEL, POD), all())) {
      for (var e : m.getBody().entrySet()) {
        if (new String(e.getKey(), StandardCharsets.US_ASCII).equals("k")) {
          bytes += e.getValue().length;
        }
      }
    }
    return bytes;
  }

  private static io.lettuce.core.Range<String> all() {
    return io.lettuce.core.Range.create("-", "+");
  }

  private static long[] longPrompt(int seed) {
    long[] keys = new long[PrefixIndex.MAX_TOUCH_BLOCKS];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = seed * 1_000_003L + i;
    }
    return keys;
  }

  /** A flood of the longest touches, with no reader: the stream stays under the byte cap. */
  @Test
  void touch_floodWithoutReaders_staysWithinTheByteCap() {
    int touches = 100; // 100 × 128 KiB = 12.5 MiB sent
    for (int i = 0; i < touches; i++) {
      assertThat(index.touchAsync(MODEL, POD, 0, longPrompt(i), 0, 0, TTL).join()).isTrue();
    }
    long perTouch = 8L * PrefixIndex.MAX_TOUCH_BLOCKS + PrefixIndex.TOUCH_OVERHEAD_BYTES;
    long kept = redis.xlen(KEYS.touches(MODEL, POD));
    assertThat(kept).isEqualTo(PrefixIndex.MAX_TOUCH_BYTES / perTouch);
    assertThat(keyBytes()).isLessThanOrEqualTo(PrefixIndex.MAX_TOUCH_BYTES);
    Long used = redis.memoryUsage(KEYS.touches(MODEL, POD));
    assertThat(used).isLessThan(PrefixIndex.MAX_TOUCH_BYTES + (1 << 20));
    // the newest are the ones kept
    StreamId stream = new StreamId(MODEL, POD, 0);
    Touches read = index.touches(stream, "0-0", 1);
    assertThat(read.touches().get(0).blockKeys()[0]).isEqualTo((touches - kept) * 1_000_003L);
  }

  /** A reader's read drops what it read; nothing else is kept for it. */
  @Test
  void touches_readByTheOnlyReader_areTrimmed() {
    StreamId stream = new StreamId(MODEL, POD, 0);
    String cursor = index.touches(stream, null, 10).cursor();
    for (int i = 0; i < 50; i++) {
      index.touchAsync(MODEL, POD, 0, new long[] {i, i + 1, i + 2}, 0, 0, TTL).join();
    }
    Touches first = index.touches(stream, cursor, 20);
    assertThat(first.touches()).hasSize(20);
    assertThat(first.more()).isTrue();
    assertThat(redis.xlen(KEYS.touches(MODEL, POD))).isEqualTo(30);
    Touches rest = index.touches(stream, first.cursor(), 100);
    assertThat(rest.touches()).hasSize(30);
    assertThat(rest.more()).isFalse();
    assertThat(redis.xlen(KEYS.touches(MODEL, POD))).isZero();
    assertThat(rest.touches().get(29).blockKeys()).containsExactly(49, 50, 51);
  }

  /** With two ranks reading, a touch is dropped only once both have read it. */
  @Test
  void touches_twoRanks_trimmedToTheSlowerReader() {
    StreamId rank0 = new StreamId(MODEL, POD, 0);
    StreamId rank1 = new StreamId(MODEL, POD, 1);
    String c0 = index.touches(rank0, null, 10).cursor();
    String c1 = index.touches(rank1, null, 10).cursor();
    for (int i = 0; i < 10; i++) {
      index.touchAsync(MODEL, POD, -1, new long[] {i}, 0, 0, TTL).join();
    }
    c0 = index.touches(rank0, c0, 100).cursor();
    assertThat(redis.xlen(KEYS.touches(MODEL, POD))).as("rank 1 has read none").isEqualTo(10);
    Touches r1 = index.touches(rank1, c1, 4);
    assertThat(r1.touches()).hasSize(4);
    assertThat(redis.xlen(KEYS.touches(MODEL, POD))).isEqualTo(6);
    assertThat(index.touches(rank1, r1.cursor(), 100).touches()).hasSize(6);
    assertThat(redis.xlen(KEYS.touches(MODEL, POD))).isZero();
    assertThat(index.touches(rank0, c0, 100).touches()).isEmpty();
  }

  /**
   * A reader whose unread touches are all gone (dropped past the cap, then the stream expired) goes
   * on after the latest touch, and is not told to read again at once.
   */
  @Test
  void touches_allUnreadGone_readerGoesOnAfterTheLatest() {
    StreamId stream = new StreamId(MODEL, POD, 0);
    String cursor = index.touches(stream, null, 10).cursor();
    for (int i = 0; i < 3; i++) {
      index.touchAsync(MODEL, POD, 0, new long[] {i}, 0, 0, TTL).join();
    }
    redis.del(KEYS.touches(MODEL, POD)); // as expiry would, the state staying
    Touches read = index.touches(stream, cursor, 10);
    assertThat(read.touches()).isEmpty();
    assertThat(read.more()).isFalse();
    index.touchAsync(MODEL, POD, 0, new long[] {7}, 0, 0, TTL).join();
    Touches next = index.touches(stream, read.cursor(), 10);
    assertThat(next.touches()).hasSize(1);
    assertThat(next.touches().get(0).blockKeys()).containsExactly(7);
  }

  /** One read returns about the byte budget, however many touches wait. */
  @Test
  void touches_longOnes_readInPiecesOfBoundedSize() {
    StreamId stream = new StreamId(MODEL, POD, 0);
    String cursor = index.touches(stream, null, 10).cursor();
    for (int i = 0; i < 20; i++) {
      index.touchAsync(MODEL, POD, 0, longPrompt(i), 0, 0, TTL).join();
    }
    int perTouch = 8 * PrefixIndex.MAX_TOUCH_BLOCKS + PrefixIndex.TOUCH_OVERHEAD_BYTES;
    int reads = 0;
    int got = 0;
    Touches read;
    do {
      read = index.touches(stream, cursor, 1000);
      assertThat(read.touches().size())
          .isLessThanOrEqualTo(1 + PrefixIndex.MAX_TOUCH_READ_BYTES / perTouch);
      got += read.touches().size();
      cursor = read.cursor();
      reads++;
    } while (read.more());
    assertThat(got).isEqualTo(20);
    assertThat(reads).isGreaterThan(1);
    assertThat(List.of(redis.xlen(KEYS.touches(MODEL, POD)))).containsExactly(0L);
  }
}
