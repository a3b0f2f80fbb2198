package io.kvindex.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.localredis.LocalRedis;
import io.kvindex.localredis.LocalRedisException;
import io.kvindex.testing.TestCertificates;
import io.lettuce.core.ScriptOutputType;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code rediss://} to a redis-server that serves TLS only ({@code port 0}), its certificate from a
 * CA made for the test: trusted through {@link RedisConnector.Builder#tlsCaFile}, refused without.
 * Skipped, saying so, where the redis-server binary is built without TLS (the embedded one and
 * Debian's have it).
 */
class TlsConnectionTest {
  private static final LuaScript INCR = LuaScript.of("incr", "return redis.call('INCR', KEYS[1])");

  @TempDir Path dir;

  @Test
  void connect_rediss_trustsTheConfiguredCaOnly() throws Exception {
    Assumptions.assumeTrue(LocalRedis.binaryAvailable(), "no redis-server binary here");
    LocalRedis.TlsFiles files = TestCertificates.create(dir);
    try (LocalRedis redis = startOrSkip(files)) {
      String uri = redis.uri().toString();
      assertThat(uri).startsWith("rediss://127.0.0.1:");

      try (RedisConnector connector = connect(uri, files.caCertificates())) {
        byte[][] key = {"kvindex:test:{tls}:n".getBytes(StandardCharsets.UTF_8)};
        Long n =
            connector
                .scripts(RetryPolicy.defaults())
                .<Long>run(INCR, ScriptOutputType.INTEGER, key)
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS)
                .orElseThrow();
        assertThat(n).isEqualTo(1L);
      }
      assertThatThrownBy(() -> connect(uri, null).close())
          .isInstanceOf(RedisUnavailableException.class)
          .hasMessageContaining("connect rediss://127.0.0.1:");
    }
  }

  @Test
  void builder_missingCaFile_saysWhatItWants() {
    assertThatThrownBy(() -> RedisConnector.builder().tlsCaFile(dir.resolve("none.pem")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("PEM file of CA certificates");
  }

  private static RedisConnector connect(String uri, Path caFile) {
    RedisConnector.Builder builder =
        RedisConnector.builder().uri(uri).meterRegistry(new SimpleMeterRegistry());
    if (caFile != null) {
      builder.tlsCaFile(caFile);
    }
    return builder.build();
  }

  private static LocalRedis startOrSkip(LocalRedis.TlsFiles files) {
    try {
      return LocalRedis.builder().tls(files).start();
    } catch (LocalRedisException e) {
      Assumptions.assumeFalse(
          String.valueOf(e.getMessage()).contains("TLS"),
          () -> "this redis-server cannot serve TLS: " + e.getMessage());
      throw e;
    }
  }
}
