package io.kvindex.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.localredis.LocalRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** What a client sent is captured from MONITOR per marked step, and replays. */
class CapturedReadsTest {
  @Test
  void capture_randomFields_replaysTheSameHmgetAndGet() {
    byte[] key = "blocks".getBytes(StandardCharsets.US_ASCII);
    byte[][] fields = new byte[3][18];
    Random random = new Random(1);
    for (byte[] field : fields) {
      random.nextBytes(field);
    }
    try (LocalRedis redis = LocalRedis.start()) {
      RedisClient client = RedisClient.create(redis.uri().toString());
      try (var connection = client.connect(ByteArrayCodec.INSTANCE);
          CapturedReads reads =
              CapturedReads.capture(
                  List.of(redis.uri()),
                  2,
                  i -> {
                    connection.sync().hmget(key, fields);
                    connection.sync().get(key);
                  })) {
        for (List<CapturedReads.Read> prompt : reads.reads()) {
          assertThat(prompt).hasSize(2);
          assertThat(prompt.get(0).key()).isEqualTo(key);
          assertThat(prompt.get(0).fields()).isDeepEqualTo(fields);
          assertThat(prompt.get(1).fields()).isNull();
        }
        assertThat(reads.replay(1)).isTrue();
      } finally {
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
      }
    }
  }
}
