package io.kvindex.index.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Each stored value's Java type and Lua library agree, byte for byte: Java encodes and the Lua
 * library decodes the value inside a real Redis (EVAL of the libraries and a few lines returning
 * the fields), Lua encodes and Java decodes, and both match the golden bytes written here.
 */
@UsesRedis
class StoredValueFormatsTest {
  private static final HexFormat HEX = HexFormat.of();

  /** Deadline 1 733 500 000 123 ms, then (slot 1, rank 0) and (slot 4095, rank 7). */
  private static final String POD_RECORD = "000001939ca6d77b" + "00010000" + "0fff0007";

  private static final PodRecord POD =
      new PodRecord(
          1_733_500_000_123L, List.of(new PodRecord.Holding(1, 0), new PodRecord.Holding(4095, 7)));

  private RedisClient client;
  private StatefulRedisConnection<byte[], byte[]> connection;
  private RedisCommands<byte[], byte[]> redis;

  @BeforeEach
  void open(RedisStandalone server) {
    client = RedisClient.create(server.uri());
    connection = client.connect(ByteArrayCodec.INSTANCE);
    redis = connection.sync();
  }

  @AfterEach
  void close() {
    connection.close();
    client.shutdown();
  }

  /** Runs {@code body} after the script libraries, as every index script runs. */
  private <T> T eval(String body, ScriptOutputType type, byte[]... argv) {
    byte[] script = Scripts.withLibraries(body).getBytes(StandardCharsets.UTF_8);
    return redis.eval(script, type, new byte[0][], argv);
  }

  @Test
  void podRecord_javaEncodes_luaDecodes() {
    byte[] encoded = POD.encode();
    assertThat(HEX.formatHex(encoded)).isEqualTo(POD_RECORD);
    List<Object> fields =
        eval(
            """
            local function hex(s)
              return (string.gsub(s, '.', function(c) return string.format('%02x', string.byte(c)) end))
            end
            local rec = ARGV[1]
            local out = {string.format('%d', decodeDeadline(rec))}
            local pairs = podPairs(rec)
            for k = 1, #pairs, 4 do
              out[#out + 1] = string.byte(pairs, k) * 256 + string.byte(pairs, k + 1)
              out[#out + 1] = string.byte(pairs, k + 2) * 256 + string.byte(pairs, k + 3)
            end
            out[#out + 1] = podLists(rec, podPair(4095, string.char(0, 7))) and 1 or 0
            out[#out + 1] = podLists(rec, podPair(4095, string.char(0, 1))) and 1 or 0
            out[#out + 1] = hex(pairsWithout(rec, string.char(0, 7)))
            return out
            """,
            ScriptOutputType.MULTI, encoded);
    assertThat(text(fields.get(0))).isEqualTo("1733500000123");
    assertThat(fields.subList(1, 5)).containsExactly(1L, 0L, 4095L, 7L);
    assertThat(fields.subList(5, 7)).containsExactly(1L, 0L);
    assertThat(text(fields.get(7))).isEqualTo("00010000");
    assertThat(PodRecord.lists(encoded, 4095, 7)).isTrue();
    assertThat(PodRecord.lists(encoded, 4095, 1)).isFalse();
  }

  @Test
  void podRecord_luaEncodes_javaDecodes() {
    byte[] encoded =
        eval(
            "return encodeDeadline(tonumber(ARGV[1])) .. podPair(1, string.char(0, 0))"
                + " .. podPair(4095, string.char(0, 7))",
            ScriptOutputType.VALUE,
            Bytes.ascii(1_733_500_000_123L));
    assertThat(HEX.formatHex(encoded)).isEqualTo(POD_RECORD);
    assertThat(PodRecord.decode(encoded)).isEqualTo(POD);
    assertThat(PodRecord.deadlineOrNull(encoded)).isEqualTo(1_733_500_000_123L);
  }

  @Test
  void podRecord_cutShort_noDeadlineInEither() {
    byte[] shortRecord = HEX.parseHex("00000193");
    assertThat(PodRecord.decode(shortRecord)).isNull();
    assertThat(PodRecord.deadlineOrNull(shortRecord)).isNull();
    Long lua =
        eval("return decodeDeadline(ARGV[1]) and 1 or 0", ScriptOutputType.INTEGER, shortRecord);
    assertThat(lua).isZero();
  }

  /** Each shape of stream record: settled, none yet, half applied (with and without x), staged. */
  private static final List<StreamRecord> STREAMS =
      List.of(
          new StreamRecord(12, 345L, null, false),
          new StreamRecord(0, null, null, false),
          new StreamRecord(12, 345L, new StreamRecord.InProgress(346, 64, "ab12", false), false),
          new StreamRecord(7, null, new StreamRecord.InProgress(1, 128, "ff", true), false),
          new StreamRecord(0, 9L, null, true));

  private static final List<String> STREAM_RECORDS =
      List.of("12|345", "0|", "12|345|346:64:ab12", "7||1:128:ff:x", "0|9|s");

  @Test
  void streamRecord_javaEncodes_luaDecodes() {
    for (int i = 0; i < STREAMS.size(); i++) {
      StreamRecord record = STREAMS.get(i);
      assertThat(record.encode()).isEqualTo(STREAM_RECORDS.get(i));
      List<Object> fields =
          eval(
              """
              local slot, wm, wmText, ps, pd, digest, tail, staged = parseStream(ARGV[1])
              return {tostring(slot), tostring(wm), wmText, tostring(ps), tostring(pd),
                tostring(digest), tostring(tail), tostring(staged)}
              """,
              ScriptOutputType.MULTI,
              Bytes.ascii(record.encode()));
      StreamRecord.InProgress part = record.inProgress();
      assertThat(fields.stream().map(StoredValueFormatsTest::text).toList())
          .as(record.encode())
          .containsExactly(
              Integer.toString(record.slot()),
              record.watermark() == null ? "nil" : record.watermark().toString(),
              record.watermark() == null ? "" : record.watermark().toString(),
              part == null ? "nil" : Long.toString(part.seq()),
              part == null ? "nil" : Long.toString(part.blocksDone()),
              part == null ? "nil" : part.digest(),
              Boolean.toString(part != null && part.tailDropped()),
              Boolean.toString(record.stagedEmpty()));
    }
  }

  @Test
  void streamRecord_luaEncodes_javaDecodes() {
    for (int i = 0; i < STREAMS.size(); i++) {
      StreamRecord record = STREAMS.get(i);
      StreamRecord.InProgress part = record.inProgress();
      byte[] encoded =
          eval(
              """
              local ps = ARGV[3] ~= '' and tonumber(ARGV[3]) or nil
              return encodeStream(tonumber(ARGV[1]), ARGV[2], ps, tonumber(ARGV[4]), ARGV[5],
                ARGV[6] == '1', ARGV[7] == '1')
              """,
              ScriptOutputType.VALUE,
              Bytes.ascii(record.slot()),
              Bytes.ascii(record.watermark() == null ? "" : record.watermark().toString()),
              Bytes.ascii(part == null ? "" : Long.toString(part.seq())),
              Bytes.ascii(part == null ? "0" : Long.toString(part.blocksDone())),
              Bytes.ascii(part == null ? "" : part.digest()),
              Bytes.ascii(part != null && part.tailDropped() ? "1" : "0"),
              Bytes.ascii(record.stagedEmpty() ? "1" : "0"));
      assertThat(text(encoded)).isEqualTo(STREAM_RECORDS.get(i));
      assertThat(StreamRecord.decode(encoded)).isEqualTo(record);
    }
  }

  private static String text(Object bulk) {
    return new String((byte[]) bulk, StandardCharsets.US_ASCII);
  }
}
