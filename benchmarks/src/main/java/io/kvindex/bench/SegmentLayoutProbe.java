package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.lettuce.core.KeyValue;
import io.lettuce.core.MapScanCursor;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What reading the same prompt would cost if the index kept a prompt's blocks in segments of {@link
 * #SEGMENT_BLOCKS} per hash field instead of one field per block: a measurement for the layout
 * decision, not a layout the index has.
 *
 * <p>From the lookup benchmark's own index it copies, per prompt and segment, the segment's blocks
 * with their real holder entries (block key, one-byte entry count, entries) into one field of a
 * separate hash. It then reads, interleaved and with prompts in the lookups' rotation: a PING, the
 * HMGET of the 2 + 256 fields a lookup reads from the index, and the HMGET of 2 + 16 segment fields
 * of the copy. Neither read decodes its reply. The copy is written in bulk, so its memory is laid
 * out prompt by prompt, which favours it a little over an index built by ingestion.
 */
final class SegmentLayoutProbe {
  static final int SEGMENT_BLOCKS = 16;
  private static final int BLOCK_FIELD_LEN = 18;
  private static final int KEY_OFFSET = 10;

  private SegmentLayoutProbe() {}

  /**
   * Measures on the blocks hash {@code blocksKey} of the fixture's index and writes the figures;
   * the copy goes to {@code copyKey} (the caller's index namespace, dropped with it). Reads {@code
   * warmup} rounds, then records {@code iterations}.
   */
  static void measure(
      int warmup,
      int iterations,
      StatefulRedisConnection<byte[], byte[]> connection,
      String blocksKey,
      String copyKey,
      LookupFixture fixture,
      ObjectNode json) {
    RedisCommands<byte[], byte[]> redis = connection.sync();
    byte[] blocks = blocksKey.getBytes(StandardCharsets.UTF_8);
    byte[] copy = copyKey.getBytes(StandardCharsets.UTF_8);
    Map<Long, byte[]> fieldOf = blockFields(redis, blocks);
    // The two non-block fields every lookup reads: the speculation gate and the slots generation.
    byte[][] head = {
      "kvindex/speculation".getBytes(StandardCharsets.US_ASCII),
      "kvindex/slots-generation".getBytes(StandardCharsets.US_ASCII)
    };
    List<byte[][]> perBlock = new ArrayList<>();
    List<byte[][]> segments = new ArrayList<>();
    long valueBytes = 0;
    long values = 0;
    for (long[] prompt : fixture.prompts) {
      byte[][] fields = new byte[head.length + prompt.length][];
      System.arraycopy(head, 0, fields, 0, head.length);
      for (int i = 0; i < prompt.length; i++) {
        fields[head.length + i] = fieldOf.get(prompt[i]);
        if (fields[head.length + i] == null) {
          throw new IllegalStateException("block " + prompt[i] + " is not in " + blocksKey);
        }
      }
      perBlock.add(fields);
      List<KeyValue<byte[], byte[]>> entries = redis.hmget(blocks, fields);
      int segmentCount = (prompt.length + SEGMENT_BLOCKS - 1) / SEGMENT_BLOCKS;
      byte[][] segmentFields = new byte[head.length + segmentCount][];
      System.arraycopy(head, 0, segmentFields, 0, head.length);
      Map<byte[], byte[]> written = new LinkedHashMap<>();
      for (int s = 0; s < segmentCount; s++) {
        ByteArrayOutputStream value = new ByteArrayOutputStream();
        for (int i = s * SEGMENT_BLOCKS;
            i < Math.min(prompt.length, (s + 1) * SEGMENT_BLOCKS);
            i++) {
          byte[] holders = entries.get(head.length + i).getValueOrElse(new byte[0]);
          if (holders.length / 2 > 255) {
            // The fixture's blocks have at most 32 holders; a real layout would need two bytes.
            throw new IllegalStateException("more than 255 holders of block " + prompt[i]);
          }
          value.writeBytes(ByteBuffer.allocate(8).putLong(prompt[i]).array());
          value.write(holders.length / 2);
          value.writeBytes(holders);
        }
        segmentFields[head.length + s] = fields[head.length + s * SEGMENT_BLOCKS];
        written.put(segmentFields[head.length + s], value.toByteArray());
        valueBytes += value.size();
        values++;
      }
      redis.hset(copy, written);
      segments.add(segmentFields);
    }
    LatencyRecorder ping = new LatencyRecorder();
    LatencyRecorder perBlockReads = new LatencyRecorder();
    LatencyRecorder segmentReads = new LatencyRecorder();
    Baselines.FieldReads blockFieldReads = new Baselines.FieldReads(blocks, perBlock);
    Baselines.FieldReads segmentFieldReads = new Baselines.FieldReads(copy, segments);
    for (int i = 0; i < warmup + iterations; i++) {
      long pingNanos = Baselines.pingOnce(connection);
      long perBlockNanos = blockFieldReads.readOnce(connection, i);
      long segmentNanos = segmentFieldReads.readOnce(connection, i);
      if (i >= warmup) {
        ping.recordNanos(pingNanos);
        perBlockReads.recordNanos(perBlockNanos);
        segmentReads.recordNanos(segmentNanos);
      }
    }
    redis.unlink(copy);
    json.put(
        "how",
        "the lookup fixture's prompts copied into segments of "
            + SEGMENT_BLOCKS
            + " blocks per field (block key, entry count, the index's own holder entries), in a"
            + " separate hash written in bulk; PING, the HMGET of the fields a lookup reads from"
            + " the index and the HMGET of gate, generation and the prompt's segment fields from"
            + " the copy, interleaved, prompts in rotation, replies not decoded; a measurement for"
            + " the layout decision, not a layout the index has");
    json.put("segment_blocks", SEGMENT_BLOCKS);
    json.put("segment_value_bytes_mean", Math.round((double) valueBytes / values));
    json.put("per_block_fields_read", perBlock.get(0).length);
    json.put("segment_fields_read", segments.get(0).length);
    json.put("iterations", iterations);
    json.put("ping_p50_us", ping.micros(50));
    json.put("per_block_hmget_p50_us", perBlockReads.micros(50));
    json.put("segment_hmget_p50_us", segmentReads.micros(50));
    json.put("segment_hmget_p99_us", segmentReads.micros(99));
    json.put("per_block_to_ping_p50_ratio", ratio(perBlockReads, ping));
    json.put("segment_to_ping_p50_ratio", ratio(segmentReads, ping));
  }

  private static double ratio(LatencyRecorder a, LatencyRecorder b) {
    return Math.round(a.micros(50) / b.micros(50) * 100) / 100.0;
  }

  /** Every block field of the hash, by the block key in its last 8 bytes. */
  private static Map<Long, byte[]> blockFields(RedisCommands<byte[], byte[]> redis, byte[] hash) {
    Map<Long, byte[]> byKey = new HashMap<>();
    ScanCursor cursor = ScanCursor.INITIAL;
    do {
      MapScanCursor<byte[], byte[]> page = redis.hscan(hash, cursor, ScanArgs.Builder.limit(5000));
      for (byte[] field : page.getMap().keySet()) {
        if (field.length == BLOCK_FIELD_LEN) {
          byKey.put(ByteBuffer.wrap(field, KEY_OFFSET, 8).getLong(), field);
        }
      }
      cursor = page;
    } while (!cursor.isFinished());
    return byKey;
  }
}
