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
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs {@code scripts/kvindex inspect} for real against a real Redis holding an index that the
 * project's own writes built: two pods, one of them with two data-parallel ranks, blocks on the GPU
 * and CPU tiers. In the integration-test phase after package (see the cli pom); the launcher is
 * told not to rebuild.
 */
@UsesRedis
class InspectLauncherIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String MODEL = "Qwen/Qwen3-8B";
  private static final String REPLICA = "replica-1";

  @TempDir Path dir;

  private static String uri(RedisStandalone redis) {
    return redis.uri().toURI().toString();
  }

  /**
   * Index {@code indexName}: pod-a rank 0 holds 3 GPU blocks and 2 CPU blocks (batches 0 and 1),
   * pod-b rank 0 holds 2 GPU blocks and rank 1 one; every stream is leased by {@value #REPLICA}.
   */
  private static void write(RedisStandalone redis, String indexName) {
    try (RedisConnector connector = RedisConnector.connect(uri(redis));
        PrefixIndex index = PrefixIndex.builder().indexName(indexName).redis(connector).build()) {
      StreamId a = StreamId.of(MODEL, "pod-a");
      Lease leaseA = lease(index, a);
      index.apply(
          a,
          KeyMode.ENGINE,
          0,
          leaseA,
          Events.batch(Events.stored(List.of(1L, 2L, 3L), null, null)));
      index.apply(
          a,
          KeyMode.ENGINE,
          1,
          leaseA,
          Events.batch(Events.stored(List.of(11L, 12L), null, "CPU")));
      StreamId b0 = new StreamId(MODEL, "pod-b", 0);
      index.apply(
          b0,
          KeyMode.ENGINE,
          0,
          lease(index, b0),
          Events.batch(Events.stored(List.of(1L, 2L), null, null)));
      StreamId b1 = new StreamId(MODEL, "pod-b", 1);
      index.apply(
          b1,
          KeyMode.ENGINE,
          0,
          lease(index, b1),
          Events.batch(Events.stored(List.of(21L), null, null)));
      index.registerReplica(REPLICA, Duration.ofMinutes(1));
    }
  }

  private static Lease lease(PrefixIndex index, StreamId stream) {
    return index.acquireLease(stream, REPLICA, Duration.ofMinutes(1)).orElseThrow();
  }

  @Test
  void launcher_inspectJson_reportsPodsRanksBlocksPerTierAndTheEpoch(RedisStandalone redis)
      throws Exception {
    write(redis, "launcher-json");

    Launcher.Result result =
        Launcher.run(
            dir, "inspect", "--redis-uri", uri(redis), "--index-name", "launcher-json", "--json");

    assertThat(result.exitCode()).as(result.err()).isZero();
    JsonNode report = JSON.readTree(result.out());
    assertThat(report.get("index").asText()).isEqualTo("launcher-json");
    assertThat(report.get("groups").asInt()).isEqualTo(1);
    assertThat(report.get("truncated").asBoolean()).isFalse();

    Map<String, JsonNode> pods = new TreeMap<>();
    report.get("pods").forEach(p -> pods.put(p.get("pod").asText(), p));
    assertThat(pods).containsOnlyKeys("pod-a", "pod-b");
    JsonNode podA = pods.get("pod-a");
    assertThat(podA.get("model").asText()).isEqualTo(MODEL);
    assertThat(podA.get("live").asBoolean()).isTrue();
    assertThat(podA.get("ranks")).hasSize(1);
    JsonNode a0 = podA.get("ranks").get(0);
    assertThat(a0.get("rank").asInt()).isZero();
    assertThat(a0.get("watermark").asLong()).isEqualTo(1);
    assertThat(a0.get("lease_owner").asText()).isEqualTo(REPLICA);
    assertThat(blocks(a0)).containsExactly(5L, 3L, 2L, 0L, 0L);

    JsonNode podB = pods.get("pod-b");
    assertThat(podB.get("ranks")).hasSize(2);
    JsonNode b0 = podB.get("ranks").get(0);
    JsonNode b1 = podB.get("ranks").get(1);
    assertThat(b0.get("rank").asInt()).isZero();
    assertThat(b1.get("rank").asInt()).isEqualTo(1);
    assertThat(blocks(b0)).containsExactly(2L, 2L, 0L, 0L, 0L);
    assertThat(blocks(b1)).containsExactly(1L, 1L, 0L, 0L, 0L);
    assertThat(b0.get("slot").asInt()).isPositive().isNotEqualTo(b1.get("slot").asInt());

    JsonNode group = report.get("group_reports").get(0);
    assertThat(group.get("group").asInt()).isZero();
    assertThat(group.get("epoch").asText()).isNotBlank();
    assertThat(group.get("version").isInt()).as("stored version: %s", group).isTrue();
    assertThat(group.get("slots_handed_out").asLong()).isEqualTo(3);

    JsonNode replica = report.get("replicas").get(0);
    assertThat(replica.get("replica").asText()).isEqualTo(REPLICA);
    assertThat(replica.get("leases").asInt()).isEqualTo(3);
  }

  @Test
  void launcher_inspectText_showsPodsRanksAndGroupForAPerson(RedisStandalone redis)
      throws Exception {
    write(redis, "launcher-text");

    Launcher.Result result =
        Launcher.run(dir, "inspect", "--redis-uri", uri(redis), "--index", "launcher-text");

    assertThat(result.exitCode()).as(result.err()).isZero();
    assertThat(result.out())
        .contains("index 'launcher-text'")
        .contains(MODEL + " / pod-a  group 0  live")
        .contains("blocks 5 (gpu 3, cpu 2, storage 0, other 0)")
        .contains(MODEL + " / pod-b  group 0  live")
        .contains("    rank 1  slot ")
        .contains("blocks 1 (gpu 1, cpu 0, storage 0, other 0)")
        .contains("lease " + REPLICA)
        .containsPattern("group 0  epoch \\S+  stored version \\d+")
        .contains(REPLICA + "  live");
  }

  @Test
  void launcher_inspectNoSuchIndex_exit1OneLineSayingWhatToCheck(RedisStandalone redis)
      throws Exception {
    write(redis, "launcher-present");

    Launcher.Result result =
        Launcher.run(
            dir, "inspect", "--redis-uri", uri(redis), "--index-name", "launcher-absent", "--json");

    assertThat(result.exitCode()).isEqualTo(1);
    assertThat(JSON.readTree(result.out()).get("groups").asInt()).isZero();
    assertThat(result.err())
        .hasLineCount(1)
        .startsWith("kvindex inspect: no index 'launcher-absent' in this Redis")
        .contains("--index-name", "--redis-uri");
  }

  @Test
  void launcher_inspectNothingListening_exit1OneLineSayingWhatToCheck() throws Exception {
    int port;
    try (ServerSocket free = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = free.getLocalPort();
    }

    Launcher.Result result =
        Launcher.run(dir, "inspect", "--redis-uri", "redis://127.0.0.1:" + port, "--json");

    assertThat(result.exitCode()).isEqualTo(1);
    assertThat(result.out()).isEmpty();
    assertThat(result.err())
        .hasLineCount(1)
        .startsWith("kvindex inspect: cannot read index 'default' at redis://127.0.0.1:" + port)
        .contains("check --redis-uri");
  }

  /** A rank's blocks: all, gpu, cpu, storage, other. */
  private static List<Long> blocks(JsonNode rank) {
    JsonNode b = rank.get("blocks");
    return List.of(
        b.get("all").asLong(),
        b.get("gpu").asLong(),
        b.get("cpu").asLong(),
        b.get("storage").asLong(),
        b.get("other").asLong());
  }
}
