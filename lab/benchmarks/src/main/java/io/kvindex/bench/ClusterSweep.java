package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.localredis.LocalRedisCluster;
import io.kvindex.redis.RedisConnector;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cluster sweep of {@code bench scale}: a local Redis Cluster of 3 primaries (no replicas), and
 * per index-group count a fresh kvindex index over it holding the same {@link LookupFixture} (64
 * pods spread over the groups, 256-block prompts); lookups/s and latency of 8 client threads
 * sharing one index (one HMGET per group per lookup, all in flight). On this machine's 2 cores the
 * three primaries, the client and its I/O threads share the CPUs: the curve shows their contention,
 * not the scale-out a cluster of real hosts gives. Not thread-safe.
 */
final class ClusterSweep {
  private static final Logger log = LoggerFactory.getLogger(ClusterSweep.class);
  private static final int THREADS = 8;
  static final String NOTE =
      "2 shared cores run 3 primaries, the client and its I/O threads: more groups mean more"
          + " HMGETs per lookup on the same CPUs, so this shows contention, not scale-out";

  private ClusterSweep() {}

  static ObjectNode run(ScaleSizes sizes, Path dir) {
    ObjectNode json = Reports.MAPPER.createObjectNode();
    ArrayNode points = json.putArray("points");
    LookupFixture fixture = LookupFixture.generate(19, 64, 256, sizes.clusterEntries());
    json.put("entries", fixture.entries);
    json.put("primaries", 3);
    json.put("threads", THREADS);
    json.put("note", NOTE);
    try (LocalRedisCluster cluster =
        LocalRedisCluster.builder().primaries(3).replicasPerPrimary(0).start()) {
      String seeds = String.join(",", cluster.seedUris().stream().map(URI::toString).toList());
      try (RedisConnector connector =
          RedisConnector.builder().uri(seeds).commandTimeout(Duration.ofSeconds(10)).build()) {
        for (int groups : sizes.groups()) {
          log.info("scale: cluster, {} index group(s)", groups);
          ObjectNode point = points.addObject();
          point.put("groups", groups);
          measure(connector, groups, fixture, sizes, point);
        }
      }
    }
    ScaleCharts.clusterGroups(json, dir.resolve("cluster_groups.png"));
    return json;
  }

  private static void measure(
      RedisConnector connector,
      int groups,
      LookupFixture fixture,
      ScaleSizes sizes,
      ObjectNode point) {
    try (KvindexContender kvindex =
        new KvindexContender(
            connector, "bench-scale-cluster-" + groups, IndexBenchmark.MODEL, groups)) {
      kvindex.store(fixture.feeds(IndexBenchmark.MODEL, 64));
      List<long[]> prompts = fixture.prompts;
      LoadRun.Operation lookup =
          (thread, i) -> {
            kvindex.depths(prompts.get((int) ((i * 8 + thread) % prompts.size())), fixture.pods);
            return true;
          };
      LoadRun.measure(
          lookup, THREADS, sizes.clusterMeasured().dividedBy(4), sizes.clusterMeasured(), point);
      point.put("incomplete_lookups", kvindex.incompleteLookups());
    }
  }
}
