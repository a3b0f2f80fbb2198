package io.kvindex.index.redis;

import io.kvindex.index.KeyMode;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * speculate.lua's call: records a route of {@code model}'s prompt to {@code pod}, by its first
 * {@link RedisSpeculation#BLOCKS_PER_ROUTE} blocks, per segment and span.
 */
record SpeculateCall(
    String model, KeyMode mode, String pod, long[] blockKeys, int cacheGroup, long ttlMs)
    implements ScriptCall.Source {
  @Override
  public ScriptCall on(KeySchema keys) {
    int recorded = Math.min(blockKeys.length, RedisSpeculation.BLOCKS_PER_ROUTE);
    long[] keysRecorded = Arrays.copyOf(blockKeys, recorded);
    Prompt route =
        new Prompt(HashFields.fieldPrefix(HashFields.scope(mode, model), cacheGroup), keysRecorded);
    List<byte[]> routes = new ArrayList<>(2 * route.segments());
    for (int k = 0; k < route.segments(); k++) {
      routes.add(route.segmentField(k));
      routes.add(
          RouteValue.blocksAndKeys(keysRecorded, route.segmentStart(k), route.segmentEnd(k)));
    }
    int g = keys.groupOf(model, pod);
    byte[] podField = HashFields.podField(model, pod);
    return ScriptCall.of(Scripts.SPECULATE)
        .key("routes", keys.speculativeRoutes(g))
        .key("order", keys.speculativeOrder(g))
        .arg("ttl_ms", ttlMs)
        .arg("pods", keys.pods(g))
        .arg("pod_field", podField)
        .arg("pod_digest", ByteBuffer.allocate(8).putLong(KeySchema.podDigest(podField)).array())
        .arg("max_fields", RedisSpeculation.FIELDS_PER_GROUP)
        .arg("max_pods", RedisSpeculation.PODS_PER_FIELD)
        .rest("routes", routes)
        .build();
  }
}
