package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.lettuce.core.api.StatefulRedisConnection;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The candidate sweep of {@code bench scale}: one index of kvindex and one of the llm-d layout over
 * as many pods as the largest candidate count, 256-block prompts; per candidate count N, each
 * lookup names the N pods holding the most of its prompt (so it walks as far as N candidates can),
 * measured interleaved on one thread. Not thread-safe.
 */
final class CandidateSweep {
  private static final Logger log = LoggerFactory.getLogger(CandidateSweep.class);
  private static final int PROMPT_BLOCKS = 256;

  private CandidateSweep() {}

  static ObjectNode run(BenchRedis redis, ScaleSizes sizes, Path dir) {
    int pods = sizes.candidates().stream().mapToInt(Integer::intValue).max().orElseThrow();
    LookupFixture fixture =
        LookupFixture.generate(13, Math.max(pods, 32), PROMPT_BLOCKS, sizes.candidateEntries());
    List<List<String>> ranked = new ArrayList<>();
    for (int p = 0; p < fixture.prompts.size(); p++) {
      ranked.add(fixture.holdersFirst(p));
    }
    ObjectNode json = Reports.MAPPER.createObjectNode();
    json.put("pods", fixture.pods.size());
    json.put("entries", fixture.entries);
    json.put("prompt_blocks", PROMPT_BLOCKS);
    ArrayNode points = json.putArray("points");
    redis.flushIfOwned();
    List<ComparedIndex> indexes = new ArrayList<>();
    try (StatefulRedisConnection<byte[], byte[]> ping = redis.binaryConnection()) {
      indexes.add(
          new KvindexContender(
              redis.connector(), "bench-scale-candidates", IndexBenchmark.MODEL, 1));
      indexes.add(new LlmdLayout(redis.uri(), 1));
      for (ComparedIndex index : indexes) {
        log.info(
            "scale: storing {} entries over {} pods into {}", fixture.entries, pods, index.name());
        index.store(fixture.feeds(IndexBenchmark.MODEL, 64));
      }
      for (int candidates : sizes.candidates()) {
        log.info("scale: {} candidates", candidates);
        SweepLookups measured =
            SweepLookups.measure(
                indexes,
                fixture.prompts,
                p -> ranked.get(p).subList(0, candidates),
                sizes.pointBudget(),
                sizes.minLookups(),
                ping);
        ObjectNode point = points.addObject();
        point.put("candidates", candidates);
        for (int k = 0; k < indexes.size(); k++) {
          point.put(indexes.get(k).name() + "_p50_us", measured.recorders.get(k).micros(50));
          point.put(indexes.get(k).name() + "_p99_us", measured.recorders.get(k).micros(99));
        }
        point.put("ping_p50_us", measured.ping.micros(50));
        point.put("lookups", measured.iterations);
      }
    } finally {
      indexes.forEach(ComparedIndex::close);
      redis.flushIfOwned();
    }
    json.put(
        "how",
        "8 pods hold each prompt whole and 24 a random prefix; a lookup's candidates are its"
            + " prompt's pods ranked by how much they hold, the first N; one thread alternates a"
            + " lookup of each index with a PING");
    ScaleCharts.candidates(json, dir.resolve("candidates.png"));
    return json;
  }
}
