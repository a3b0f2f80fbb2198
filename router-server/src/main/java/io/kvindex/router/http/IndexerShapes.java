package io.kvindex.router.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.index.PodMatch;
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
        "longest_matched", scores.pods().stream().mapToInt(scores::matchedTokens).max().orElse(0));
    ObjectNode legacy = out.putObject("scores");
    ObjectNode instances = out.putObject("instances");
    for (PodMatch p : scores.pods()) {
      ObjectNode ranks = legacy.putObject(p.pod());
      p.rankDepths().forEach((rank, blocks) -> ranks.put(String.valueOf(rank), blocks * bs));
      ObjectNode instance = instances.putObject(p.pod());
      instance.put("longest_matched", scores.matchedTokens(p));
      instance.put("gpu", p.gpuDepth() * bs);
      instance.put("cpu", p.gpuCpuDepth() * bs);
      instance.put("disk", scores.matchedTokens(p));
      ObjectNode dp = instance.putObject("dp");
      p.rankDepths().forEach((rank, blocks) -> dp.put(String.valueOf(rank), blocks * bs));
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
    for (PodMatch p : scores.pods()) {
      ObjectNode instance = instances.putObject(p.pod());
      instance.put("longest_matched", scores.matchedTokens(p));
      instance.put("GPU", p.gpuDepth() * bs);
      instance.put("CPU", p.gpuCpuDepth() * bs);
      instance.put("DISK", scores.matchedTokens(p));
      ObjectNode dp = instance.putObject("DP");
      p.rankDepths().forEach((rank, blocks) -> dp.put(String.valueOf(rank), blocks * bs));
    }
    return out;
  }
}
