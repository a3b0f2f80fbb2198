package io.kvindex.router.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.router.PodScore;
import io.kvindex.router.Scores;

/**
 * The {@code /query} answers of the two public KV-indexer APIs, in tokens. Tier counts are
 * cumulative: {@code gpu <= cpu <= disk}, where {@code disk} counts blocks on any tier. Thread-safe
 * (stateless).
 */
final class IndexerShapes {
  private IndexerShapes() {}

  /**
   * Dynamo's standalone indexer: {@code {"longest_matched", "scores": {worker: {rank: gpu tokens}},
   * "instances": {worker: {longest_matched, gpu, cpu, disk, dp}}}}.
   */
  static ObjectNode dynamo(Scores scores) {
    ObjectNode out = Json.MAPPER.createObjectNode();
    int bs = scores.blockSize();
    out.put(
        "longest_matched",
        scores.pods().stream().mapToInt(PodScore::matchedTokens).max().orElse(0));
    ObjectNode legacy = out.putObject("scores");
    ObjectNode instances = out.putObject("instances");
    for (PodScore p : scores.pods()) {
      ObjectNode ranks = legacy.putObject(p.pod());
      p.rankBlocks().forEach((rank, blocks) -> ranks.put(String.valueOf(rank), blocks * bs));
      ObjectNode instance = instances.putObject(p.pod());
      instance.put("longest_matched", p.matchedTokens());
      instance.put("gpu", p.gpuBlocks() * bs);
      instance.put("cpu", p.gpuCpuBlocks() * bs);
      instance.put("disk", p.matchedTokens());
      ObjectNode dp = instance.putObject("dp");
      p.rankBlocks().forEach((rank, blocks) -> dp.put(String.valueOf(rank), blocks * bs));
    }
    return out;
  }

  /**
   * Mooncake's conductor indexer (RFC #1403): {@code {tenant: {instance: {longest_matched, GPU,
   * CPU, DISK, DP}}}}.
   */
  static ObjectNode mooncake(Scores scores, String tenant) {
    ObjectNode out = Json.MAPPER.createObjectNode();
    ObjectNode instances = out.putObject(tenant);
    int bs = scores.blockSize();
    for (PodScore p : scores.pods()) {
      ObjectNode instance = instances.putObject(p.pod());
      instance.put("longest_matched", p.matchedTokens());
      instance.put("GPU", p.gpuBlocks() * bs);
      instance.put("CPU", p.gpuCpuBlocks() * bs);
      instance.put("DISK", p.matchedTokens());
      ObjectNode dp = instance.putObject("DP");
      p.rankBlocks().forEach((rank, blocks) -> dp.put(String.valueOf(rank), blocks * bs));
    }
    return out;
  }
}
