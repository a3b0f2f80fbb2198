package io.kvindex.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvindex.index.Events;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.redis.RedisConnector;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code kvindex inspect} against a real index that real writes built. */
@UsesRedis
class InspectCommandTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String MODEL = "Qwen/Qwen3-8B";

  private static String uri(RedisStandalone redis) {
    return redis.uri().toURI().toString();
  }

  /** An index with one pod whose rank 0 holds 3 GPU blocks, leased by replica-1. */
  private static void write(RedisStandalone redis, String indexName) {
    try (RedisConnector connector = RedisConnector.connect(uri(redis));
        PrefixIndex index = PrefixIndex.builder().indexName(indexName).redis(connector).build()) {
      StreamId s = StreamId.of(MODEL, "pod-a");
      Lease lease = index.acquireLease(s, "replica-1", Duration.ofMinutes(1)).orElseThrow();
      index.apply(
          s,
          KeyMode.ENGINE,
          0,
          lease,
          Events.batch(Events.stored(List.of(1L, 2L, 3L), null, null)));
      index.registerReplica("replica-1", Duration.ofMinutes(1));
      index.noteReaderKeysAsync(MODEL, "token:16").join();
    }
  }

  @Test
  void inspect_json_reportsThePodItsBlocksAndTheKeyModeProblem(RedisStandalone redis)
      throws IOException {
    write(redis, "json");

    CliRun run = CliRun.of("inspect", "--redis-uri", uri(redis), "--index-name", "json", "--json");

    assertThat(run.exitCode()).as(run.err()).isZero();
    JsonNode report = JSON.readTree(run.out());
    assertThat(report.get("groups").asInt()).isEqualTo(1);
    JsonNode rank = report.get("pods").get(0).get("ranks").get(0);
    assertThat(rank.get("blocks").get("all").asLong()).isEqualTo(3);
    assertThat(rank.get("blocks").get("gpu").asLong()).isEqualTo(3);
    assertThat(rank.get("lease_owner").asText()).isEqualTo("replica-1");
    assertThat(rank.get("watermark").asLong()).isZero();
    assertThat(report.get("pods").get(0).get("live").asBoolean()).isTrue();
    assertThat(report.get("models").get(0).get("problem").asText()).contains("keys it as token");
    assertThat(report.get("replicas").get(0).get("leases").asInt()).isEqualTo(1);
  }

  @Test
  void inspect_text_showsEachSectionForAPerson(RedisStandalone redis) {
    write(redis, "text");

    CliRun run = CliRun.of("inspect", "--redis-uri", uri(redis), "--index", "text");

    assertThat(run.exitCode()).as(run.err()).isZero();
    assertThat(run.out())
        .contains("index 'text'")
        .contains("writers: engine  routers: token:16")
        .contains("! a router keys it as token")
        .contains(MODEL + " / pod-a  group 0  live")
        .contains("blocks 3 (gpu 3, cpu 0, storage 0, other 0)")
        .contains("lease replica-1")
        .contains("replica-1  live");
  }

  @Test
  void inspect_otherPod_listsNoPod(RedisStandalone redis) throws IOException {
    write(redis, "filter");

    CliRun run =
        CliRun.of(
            "inspect", "--redis-uri", uri(redis), "--index", "filter", "--pod", "pod-b", "--json");

    assertThat(run.exitCode()).isZero();
    assertThat(JSON.readTree(run.out()).get("pods")).isEmpty();
  }

  @Test
  void inspect_noSuchIndex_exits1AndSaysWhatToCheck(RedisStandalone redis) {
    CliRun run = CliRun.of("inspect", "--redis-uri", uri(redis), "--index", "absent");

    assertThat(run.exitCode()).isEqualTo(1);
    assertThat(run.err()).contains("no index 'absent'").contains("--index-name");
  }

  @Test
  void inspect_redisUnreachable_exits1AndSaysWhatToCheck() throws IOException {
    int port;
    try (ServerSocket free = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = free.getLocalPort();
    }

    CliRun run =
        CliRun.of("inspect", "--redis-uri", "redis://:secret@127.0.0.1:" + port, "--index", "x");

    assertThat(run.exitCode()).isEqualTo(1);
    assertThat(run.err()).contains("cannot read index 'x'").contains("--redis-uri");
    assertThat(run.err()).doesNotContain("secret");
  }
}
