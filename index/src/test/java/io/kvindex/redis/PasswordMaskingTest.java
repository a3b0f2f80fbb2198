package io.kvindex.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.kvindex.testing.Fresh;
import io.kvindex.testing.LogCapture;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every URI form the connector accepts, with a password that must never be shown: not in the
 * message of a connect or parse failure (causes and suppressed exceptions included), not in
 * anything logged meanwhile (every logger at DEBUG), not in {@link RedisConnector#masked}. The URIs
 * point at a real server that refuses the password (or the TLS handshake, or the Sentinel
 * question), so the credentials really are sent.
 */
@UsesRedis
class PasswordMaskingTest {

  /** Parts of the passwords below long enough that showing one would give it away. */
  private static final List<String> SECRETS =
      List.of("Pa55w0rd", "Pa55", "w0rd", "Pa55%2Fw0rd", "Pa55%40w0rd", "Sent1nel", "0nly");

  static Stream<Arguments> forms() {
    return Stream.of(
        Arguments.of("password only", "redis://0nlyPa55w0rd@127.0.0.1:{port}"),
        Arguments.of("user and password", "redis://kv:Pa55w0rd@127.0.0.1:{port}"),
        Arguments.of("password with / and @", "redis://kv:Pa55/w0rd@x@127.0.0.1:{port}"),
        Arguments.of("percent-encoded / and @", "redis://kv:Pa55%2Fw0rd%40x@127.0.0.1:{port}"),
        Arguments.of("TLS", "rediss://kv:Pa55w0rd@127.0.0.1:{port}"),
        Arguments.of("cluster scheme", "redis-cluster://kv:Pa55w0rd@127.0.0.1:{port},127.0.0.1:1"),
        Arguments.of("cluster over TLS", "rediss-cluster://kv:Pa55w0rd@127.0.0.1:{port}"),
        Arguments.of(
            "comma-separated seeds",
            "redis://kv:Pa55w0rd@127.0.0.1:{port},redis://kv:Pa55/w0rd@127.0.0.1:{port}"),
        Arguments.of("sentinel", "redis-sentinel://kv:Pa55w0rd@127.0.0.1:{port}#kvindex"),
        Arguments.of(
            "sentinel with sentinel password",
            "redis-sentinel://Pa55w0rd@127.0.0.1:{port}/0?sentinelPassword=Sent1nel#kvindex"),
        Arguments.of(
            "sentinel over TLS",
            "rediss-sentinel://kv:Pa55w0rd@127.0.0.1:{port}?sentinelMasterId=m"));
  }

  private static int port;

  /** A private server whose default user has a password, so every form's login is refused. */
  @BeforeAll
  static void protect(@Fresh RedisStandalone redis) {
    RedisClient client = RedisClient.create(redis.uri());
    try (StatefulRedisConnection<String, String> admin = client.connect()) {
      admin.sync().configSet("requirepass", "Adm1n-only");
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }
    port = redis.uri().getPort();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("forms")
  void connect_neverShowsPassword(String form, String template) {
    String uri = template.replace("{port}", Integer.toString(port));
    Throwable failure;
    String logged;
    try (LogCapture logs = LogCapture.start()) {
      failure = catchThrowable(() -> connect(uri).close());
      logged = logs.text();
    }

    assertThat(failure).as(form).isNotNull();
    assertNoSecret(everything(failure), form + ": exception");
    assertNoSecret(logged, form + ": log");
    assertNoSecret(RedisConnector.masked(uri), form + ": masked");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("forms")
  void parse_malformedNeverShowsPassword(String form, String template) {
    // lettuce quotes the whole text in this one's message: "Expected closing bracket ..."
    String uri = template.replaceFirst("127\\.0\\.0\\.1:\\{port}", "[::1");
    Throwable failure;
    String logged;
    try (LogCapture logs = LogCapture.start()) {
      failure = catchThrowable(() -> connect(uri).close());
      logged = logs.text();
    }

    assertThat(failure).as(form).isInstanceOf(IllegalArgumentException.class);
    assertThat(failure.getMessage()).as(form).contains("invalid Redis URI");
    assertNoSecret(everything(failure), form + ": exception");
    assertNoSecret(logged, form + ": log");
  }

  private static RedisConnector connect(String uri) {
    return RedisConnector.builder()
        .uri(uri)
        .commandTimeout(Duration.ofSeconds(2))
        .meterRegistry(new SimpleMeterRegistry())
        .build();
  }

  private static void assertNoSecret(String text, String where) {
    for (String secret : SECRETS) {
      assertThat(text).as(where).doesNotContain(secret);
    }
  }

  /** The messages and toString of an exception, its causes and its suppressed, recursively. */
  private static String everything(Throwable failure) {
    List<String> parts = new ArrayList<>();
    collect(failure, parts, 0);
    return String.join("\n", parts);
  }

  private static void collect(Throwable t, List<String> parts, int depth) {
    if (t == null || depth > 20) {
      return;
    }
    parts.add(t.toString());
    parts.add(String.valueOf(t.getMessage()));
    for (Throwable suppressed : t.getSuppressed()) {
      collect(suppressed, parts, depth + 1);
    }
    collect(t.getCause(), parts, depth + 1);
  }
}
