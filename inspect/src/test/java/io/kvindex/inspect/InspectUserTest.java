package io.kvindex.inspect;

import static io.kvindex.index.Events.batch;
import static io.kvindex.index.Events.hashes;
import static io.kvindex.index.Events.stored;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.common.Await;
import io.kvindex.index.ApplyStatus;
import io.kvindex.index.Events;
import io.kvindex.index.KeyCheckNote;
import io.kvindex.index.Lease;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.index.redis.AclFixtures;
import io.kvindex.index.redis.KeySchema;
import io.kvindex.redis.RedisConnector;
import io.kvindex.testing.Fresh;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The read-only ACL user for {@code kvindex inspect} of docs/operations.md, applied as written
 * there: the inspector reads a whole index with it, refused nothing ({@code ACL LOG} stays empty),
 * and the user writes nothing. The ingester's and the router's users are AclUsersTest's, in index.
 */
@UsesRedis
class InspectUserTest {
  private static final String MODEL = "m";
  private static final StreamId STREAM = StreamId.of(MODEL, "pod-a");
  private static final String INDEX = "acl";
  private static final Path OPERATIONS = Path.of("..", "docs", "operations.md");

  private final List<AutoCloseable> opened = new ArrayList<>();

  @AfterEach
  void close() throws Exception {
    for (int i = opened.size() - 1; i >= 0; i--) {
      opened.get(i).close();
    }
  }

  @Test
  void inspectUser_readsTheIndexAndWritesNothing(@Fresh RedisStandalone redis) throws IOException {
    createUsers(redis.uri());
    String uri = "redis://" + redis.uri().getHost() + ":" + redis.uri().getPort();
    PrefixIndex ingester =
        PrefixIndex.builder()
            .indexName(INDEX)
            .redis(connect(withUser(uri, "kvindex-ingester")))
            .build();
    opened.add(ingester);
    Lease lease = ingester.acquireLease(STREAM, "replica-1", Duration.ofMinutes(1)).orElseThrow();
    assertThat(
            ingester
                .apply(
                    STREAM,
                    Events.mode(STREAM),
                    0,
                    lease,
                    batch(stored(hashes(500, 20), null, null)))
                .status())
        .isEqualTo(ApplyStatus.APPLIED);
    assertThat(ingester.heartbeat(MODEL, STREAM.pod(), Duration.ofSeconds(30))).isTrue();
    KeyCheckNote check =
        new KeyCheckNote(
            KeyCheckNote.Verdict.MISMATCH,
            "engine:sha256:16",
            "engine:sha256_cbor:16",
            0,
            3,
            "routers are told engine:sha256_cbor:16, but the engines hash as engine:sha256:16",
            1L);
    assertThat(ingester.noteKeyCheckAsync(STREAM.model(), check).join()).isTrue();

    RedisConnector inspector = connect(withUser(uri, "kvindex-inspect"));
    IndexReport report = RedisInspector.of(inspector, INDEX).read(null, null);

    assertThat(report.pods()).extracting(IndexReport.Pod::pod).contains(STREAM.pod());
    assertThat(report.models()).anySatisfy(m -> assertThat(m.keyCheck()).isEqualTo(check));
    assertThat(report.groupReports().get(0).memoryBytes()).containsKey("blocks");
    assertThat(aclLog(redis.uri())).as("ACL LOG").isEmpty();
    assertThatThrownBy(
            () ->
                Await.of(
                    inspector
                        .commands()
                        .hset(new KeySchema(INDEX, 1).meta(0), new byte[] {'x'}, new byte[] {'y'})
                        .toCompletableFuture()))
        .as("the inspect user writes nothing")
        .hasMessageContaining("NOPERM");
  }

  /**
   * Runs the {@code ACL SETUSER kvindex-...} lines of docs/operations.md on one node, as its
   * default user.
   */
  private void createUsers(RedisURI node) throws IOException {
    List<String> lines =
        Files.readAllLines(OPERATIONS).stream()
            .filter(l -> l.startsWith("ACL SETUSER kvindex-"))
            .toList();
    assertThat(lines).as("ACL SETUSER lines in %s", OPERATIONS).hasSize(3);
    AclFixtures.createUsers(node, lines, opened);
  }

  private static String withUser(String uri, String user) {
    return AclFixtures.withUser(uri, user);
  }

  private RedisConnector connect(String uri) {
    RedisConnector connector =
        RedisConnector.builder().uri(uri).meterRegistry(new SimpleMeterRegistry()).build();
    opened.add(connector);
    return connector;
  }

  private static String aclLog(RedisURI node) {
    RedisClient client = RedisClient.create(node);
    try (StatefulRedisConnection<String, String> admin = client.connect()) {
      return admin.sync().aclLog().stream().map(Object::toString).collect(Collectors.joining("\n"));
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }
  }
}
