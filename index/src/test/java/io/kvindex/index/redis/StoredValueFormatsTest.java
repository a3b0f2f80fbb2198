package io.kvindex.index.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.Tier;
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

  /** Every value library, as a script names those it uses. */
  private static final String VALUE_LIBRARIES =
      "-- LIBRARIES: block_value, segment_value, slot_counts, pod_record, stream_record,"
          + " route_value\n";

  /** Runs {@code body} after the value libraries, as an index script naming them runs. */
  private <T> T eval(String body, ScriptOutputType type, byte[]... argv) {
    byte[] script = Scripts.withLibraries(VALUE_LIBRARIES + body).getBytes(StandardCharsets.UTF_8);
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

  /**
   * Head 0x0102030405060708 at position 0x012345, then (slot 1, GPU) and (slot 4095, CPU|STORAGE).
   */
  private static final String LOCATED_BLOCK = "0102030405060708" + "012345" + "0011" + "fff6";

  private static final String UNLOCATED_BLOCK = "0011" + "fff6";

  private static final List<BlockValue.Entry> ENTRIES =
      List.of(
          new BlockValue.Entry(1, Tier.GPU.bit()),
          new BlockValue.Entry(4095, Tier.CPU.bit() | Tier.STORAGE.bit()));

  private static final BlockValue LOCATED =
      new BlockValue(new BlockValue.Locator(0x0102030405060708L, 0x012345), ENTRIES);

  private static final BlockValue UNLOCATED = new BlockValue(null, ENTRIES);

  /** Lua that returns a block value's fields: entries' start, head (hex), position, entries. */
  private static final String DECODE_BLOCK =
      """
      local v = ARGV[1]
      local first = firstEntry(v)
      local out = {first}
      if first > 1 then
        out[2] = hex(locatorHead(v))
        out[3] = positionOf(v)
      else
        out[2], out[3] = '', -1
      end
      for e = first, #v - 1, 2 do
        local b1, b2 = string.byte(v, e, e + 1)
        out[#out + 1] = entrySlot(b1, b2)
        out[#out + 1] = entryTiers(b2)
      end
      return out
      """;

  @Test
  void blockValue_javaEncodes_luaDecodes() {
    assertThat(HEX.formatHex(LOCATED.encode())).isEqualTo(LOCATED_BLOCK);
    assertThat(HEX.formatHex(UNLOCATED.encode())).isEqualTo(UNLOCATED_BLOCK);
    List<Object> located =
        eval(HEX_FUNCTION + DECODE_BLOCK, ScriptOutputType.MULTI, LOCATED.encode());
    assertThat(located.get(0)).isEqualTo(12L);
    assertThat(text(located.get(1))).isEqualTo("0102030405060708");
    assertThat(located.subList(2, 7)).containsExactly(0x012345L, 1L, 1L, 4095L, 6L);
    List<Object> unlocated =
        eval(HEX_FUNCTION + DECODE_BLOCK, ScriptOutputType.MULTI, UNLOCATED.encode());
    assertThat(unlocated.get(0)).isEqualTo(1L);
    assertThat(unlocated.subList(2, 7)).containsExactly(-1L, 1L, 1L, 4095L, 6L);
  }

  @Test
  void blockValue_luaEncodes_javaDecodes() {
    byte[] located =
        eval(
            "return locator(ARGV[1], 74565) .. encodeEntry(1, 1) .. encodeEntry(4095, 6)",
            ScriptOutputType.VALUE,
            HEX.parseHex("0102030405060708"));
    assertThat(HEX.formatHex(located)).isEqualTo(LOCATED_BLOCK);
    assertThat(BlockValue.decode(located)).isEqualTo(LOCATED);
    assertThat(BlockValue.entriesFrom(located)).isEqualTo(BlockValue.LOCATOR_BYTES);
    byte[] unlocated =
        eval("return encodeEntry(1, 1) .. encodeEntry(4095, 6)", ScriptOutputType.VALUE);
    assertThat(HEX.formatHex(unlocated)).isEqualTo(UNLOCATED_BLOCK);
    assertThat(BlockValue.decode(unlocated)).isEqualTo(UNLOCATED);
    assertThat(BlockValue.entriesFrom(unlocated)).isZero();
  }

  /**
   * A span of three slots: offset 0 (key 11..11) held by slot 1 on GPU, offset 1 (key 22..22) the
   * same as the slot before it, offset 2 (key 33..33) the located block's two entries.
   */
  private static final String SPAN =
      "00"
          + "1111111111111111"
          + "0002"
          + "0011"
          + "01"
          + "2222222222222222"
          + "ffff"
          + "02"
          + "3333333333333333"
          + "0004"
          + "0011fff6";

  private static final SegmentValue SPAN_VALUE =
      new SegmentValue(
          List.of(
              new SegmentValue.Slot(0, 0x1111111111111111L, List.of(ENTRIES.get(0))),
              new SegmentValue.Slot(1, 0x2222222222222222L, null),
              new SegmentValue.Slot(2, 0x3333333333333333L, ENTRIES)),
          false);

  @Test
  void segmentValue_javaEncodes_luaDecodes() {
    byte[] encoded = SPAN_VALUE.encode();
    assertThat(HEX.formatHex(encoded)).isEqualTo(SPAN);
    List<Object> slots =
        eval(
            HEX_FUNCTION
                + """
                local v, out, i = ARGV[1], {}, 1
                while i + SEGMENT_SLOT_HEADER - 1 <= #v do
                  local len = slotLength(v, i)
                  out[#out + 1] = string.byte(v, i)
                  out[#out + 1] = hex(string.sub(v, i + 1, i + 8))
                  if len == SAME_AS_BEFORE_LEN then
                    out[#out + 1] = 'same'
                    len = 0
                  else
                    out[#out + 1] = hex(string.sub(v, i + SEGMENT_SLOT_HEADER,
                      i + SEGMENT_SLOT_HEADER + len - 1))
                  end
                  i = i + SEGMENT_SLOT_HEADER + len
                end
                out[#out + 1] = ARGV[2] == OVERFLOWED and 1 or 0
                return out
                """,
            ScriptOutputType.MULTI,
            encoded,
            new SegmentValue(List.of(), true).encode());
    assertThat(slots.get(0)).isEqualTo(0L);
    assertThat(text(slots.get(1))).isEqualTo("1111111111111111");
    assertThat(text(slots.get(2))).isEqualTo("0011");
    assertThat(slots.get(3)).isEqualTo(1L);
    assertThat(text(slots.get(5))).isEqualTo("same");
    assertThat(slots.get(6)).isEqualTo(2L);
    assertThat(text(slots.get(7))).isEqualTo("3333333333333333");
    assertThat(text(slots.get(8))).isEqualTo(UNLOCATED_BLOCK);
    assertThat(slots.get(9)).as("the overflow marker").isEqualTo(1L);
  }

  @Test
  void segmentValue_luaEncodes_javaDecodes() {
    byte[] encoded =
        eval(
            """
            return encodeSlot(string.char(0) .. ARGV[1], encodeEntry(1, 1))
              .. string.char(1) .. ARGV[2] .. SAME_AS_BEFORE
              .. encodeSlot(string.char(2) .. ARGV[3], encodeEntry(1, 1) .. encodeEntry(4095, 6))
            """,
            ScriptOutputType.VALUE,
            HEX.parseHex("1111111111111111"),
            HEX.parseHex("2222222222222222"),
            HEX.parseHex("3333333333333333"));
    assertThat(HEX.formatHex(encoded)).isEqualTo(SPAN);
    assertThat(SegmentValue.decode(encoded)).isEqualTo(SPAN_VALUE);
    byte[] overflowed = eval("return OVERFLOWED", ScriptOutputType.VALUE);
    assertThat(SegmentValue.decode(overflowed)).isEqualTo(new SegmentValue(List.of(), true));
    assertThat(SegmentValue.isOverflowed(overflowed)).isTrue();
  }

  @Test
  void segmentValue_cutShort_rejected() {
    byte[] cut = java.util.Arrays.copyOf(SPAN_VALUE.encode(), 14);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> SegmentValue.decode(cut))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("cut short");
  }

  @Test
  void slotCounts_sameFieldsInBoth() {
    List<Object> lua =
        eval(
            """
            local out = countFields(12)
            for _, bit in ipairs({1, 2, 4, 8}) do out[#out + 1] = COUNT_INDEX[bit] end
            out[#out + 1] = OVERFLOWED_SEGMENTS
            return out
            """,
            ScriptOutputType.MULTI);
    byte[][] fields = SlotCounts.fields(12);
    assertThat(lua.subList(0, 5).stream().map(StoredValueFormatsTest::text))
        .containsExactly("12:blocks", "12:gpu", "12:cpu", "12:storage", "12:other");
    for (int i = 0; i < fields.length; i++) {
      assertThat(text(fields[i])).isEqualTo(text(lua.get(i)));
    }
    // Each tier's count is the one of its name: GPU's the second, ..., OTHER's the fifth.
    assertThat(lua.subList(5, 9)).containsExactly(2L, 3L, 4L, 5L);
    assertThat(text(lua.get(9))).isEqualTo(text(SlotCounts.OVERFLOWED_SEGMENTS_FIELD));
    assertThat(
            SlotCounts.decode(
                java.util.Arrays.asList(
                    Bytes.ascii(5), Bytes.ascii(3), null, Bytes.ascii(1), Bytes.ascii(0))))
        .isEqualTo(new SlotCounts(5, 3, 0, 1, 0));
  }

  /**
   * The libraries' walks over a whole value (which the scripts' hot loops call once per value) give
   * what Java's decoding of the same bytes gives: a block value's entries without a dead slot's, a
   * tier added and cleared, the slots named and held.
   */
  @Test
  void blockValue_walks_agreeWithJava() {
    List<Object> lua =
        eval(
            """
            local v, u = ARGV[1], ARGV[2]
            local first = firstEntry(v)
            local counted = {}
            local kept = entriesWithout(v, first, #v + 1, {[4095] = true}, counted, 1)
            local code, times = next(counted)
            local gone = {entryOfCode(code)}
            local none = entriesWithout(v, first, #v + 1, {[7] = true})
            local hi1, lo1 = entryId(1)
            local hi2, lo2 = entryId(4095)
            local hi3, lo3 = entryId(12)
            local named, ids = {[1] = true}, {}
            nameSlots(v, first, #v + 1, named, ids)
            nameSlots(u, 1, #u + 1, named, ids)
            local added, new = withTier(v, hi1, lo1, 2)
            local same = withTier(v, hi1, lo1, 1)
            local appended, isNew = withTier(u, hi3, lo3, 8)
            local cleared, still = withoutTier(u, hi2, lo2, 2)
            local emptied = withoutTier(string.sub(u, 1, 2), hi1, lo1, 1)
            return {kept, gone[1], gone[2], none and 1 or 0,
              #ids, ids[1], added, new and 1 or 0, same and 1 or 0, appended, isNew and 1 or 0,
              cleared, still and 1 or 0, emptied,
              heldByAny(u, 1, #u + 1, {[4095] = true}) and 1 or 0,
              heldByAny(u, 1, #u + 1, {[2] = true}) and 1 or 0,
              isLocated(v) and 1 or 0, isLocated(u) and 1 or 0, times}
            """,
            ScriptOutputType.MULTI,
            LOCATED.encode(),
            UNLOCATED.encode());
    BlockValue.Entry gpu1 = ENTRIES.get(0);
    assertThat(BlockValue.decode((byte[]) lua.get(0)))
        .isEqualTo(new BlockValue(LOCATED.locator(), List.of(gpu1)));
    assertThat(lua.subList(1, 6)).containsExactly(4095L, 6L, 0L, 1L, 4095L);
    assertThat(lua.get(18)).as("the dead entry counted once").isEqualTo(1L);
    assertThat(BlockValue.decode((byte[]) lua.get(6)))
        .isEqualTo(
            new BlockValue(
                LOCATED.locator(),
                List.of(new BlockValue.Entry(1, Tier.GPU.bit() | Tier.CPU.bit()), ENTRIES.get(1))));
    assertThat(lua.subList(7, 9)).containsExactly(0L, 0L);
    assertThat(BlockValue.decode((byte[]) lua.get(9)))
        .isEqualTo(
            new BlockValue(
                null, List.of(gpu1, ENTRIES.get(1), new BlockValue.Entry(12, Tier.OTHER.bit()))));
    assertThat(lua.get(10)).isEqualTo(1L);
    assertThat(BlockValue.decode((byte[]) lua.get(11)))
        .isEqualTo(
            new BlockValue(null, List.of(gpu1, new BlockValue.Entry(4095, Tier.STORAGE.bit()))));
    assertThat(lua.get(12)).isEqualTo(1L);
    assertThat(text(lua.get(13))).isEmpty();
    assertThat(lua.subList(14, 18)).containsExactly(1L, 0L, 1L, 0L);
  }

  /**
   * A segment or span value's walks agree with Java's decoding: where its slots start, and the
   * value without a dead slot's entries (a slot left empty goes, and a SAME_AS_BEFORE slot with it;
   * one after a slot that keeps entries stays as it is), and the slots counted per group: a
   * full-attention segment's own (offsets below 16) apart from a sparse group's it keeps (group 1's
   * at offsets from 32).
   */
  @Test
  void segmentValue_walks_agreeWithJava() {
    byte[] merged =
        new SegmentValue(
                List.of(
                    new SegmentValue.Slot(0, 0x1111111111111111L, List.of(ENTRIES.get(0))),
                    new SegmentValue.Slot(33, 0x2222222222222222L, List.of(ENTRIES.get(0))),
                    new SegmentValue.Slot(34, 0x3333333333333333L, List.of(ENTRIES.get(1)))),
                false)
            .encode();
    List<Object> lua =
        eval(
            """
            local v = ARGV[1]
            local starts, count = slotStarts(v)
            local out = {count, starts[1] and 1 or 0, starts[14] and 1 or 0, starts[25] and 1 or 0,
              slotEnd(v, 1), slotEnd(v, 14), slotEnd(v, 25)}
            out[#out + 1] = segmentWithout(v, {[1] = true})
            out[#out + 1] = segmentWithout(v, {[4095] = true})
            out[#out + 1] = segmentWithout(v, {[1] = true, [4095] = true})
            out[#out + 1] = segmentWithout(v, {[7] = true}) and 1 or 0
            out[#out + 1] = segmentWithout(OVERFLOWED, {[1] = true}) and 1 or 0
            local named, ids = {}, {}
            nameSegmentSlots(v, named, ids)
            out[#out + 1] = #ids
            out[#out + 1] = ids[1]
            out[#out + 1] = ids[2]
            local _, mergedCount = slotStarts(ARGV[2])
            out[#out + 1] = mergedCount
            out[#out + 1] = mostSlotsOfOneGroup(ARGV[2])
            return out
            """,
            ScriptOutputType.MULTI,
            SPAN_VALUE.encode(),
            merged);
    assertThat(lua.subList(0, 7)).containsExactly(3L, 1L, 1L, 1L, 14L, 25L, 40L);
    List<SegmentValue.Slot> slots = SPAN_VALUE.slots();
    assertThat(SegmentValue.decode((byte[]) lua.get(7)))
        .isEqualTo(
            new SegmentValue(
                List.of(new SegmentValue.Slot(2, slots.get(2).key(), List.of(ENTRIES.get(1)))),
                false));
    assertThat(SegmentValue.decode((byte[]) lua.get(8)))
        .isEqualTo(
            new SegmentValue(
                List.of(
                    slots.get(0),
                    slots.get(1),
                    new SegmentValue.Slot(2, slots.get(2).key(), List.of(ENTRIES.get(0)))),
                false));
    assertThat(text(lua.get(9))).isEmpty();
    assertThat(lua.subList(10, 17)).containsExactly(0L, 0L, 2L, 1L, 4095L, 3L, 2L);
  }

  @Test
  void podRecord_slots_andSlotCounts_entryCounted_agreeWithJava() {
    List<Object> lua =
        eval(
            """
            local set = {}
            local any = podSlotsInto(ARGV[1], set)
            local none = podSlotsInto(string.sub(ARGV[1], 1, 8), {})
            local c = noCounts()
            countEntry(c, 6, -1)
            countEntry(c, 1, 2)
            local out = {any and 1 or 0, none and 1 or 0, set[1] and 1 or 0, set[4095] and 1 or 0,
              set[0] and 1 or 0}
            for k = 1, #c do out[#out + 1] = c[k] end
            return out
            """,
            ScriptOutputType.MULTI,
            POD.encode());
    assertThat(POD.holdings()).extracting(PodRecord.Holding::slot).containsExactly(1, 4095);
    assertThat(lua.subList(0, 5)).containsExactly(1L, 0L, 1L, 1L, 0L);
    // In SlotCounts's order: an entry of CPU and STORAGE taken away, one of GPU added twice.
    assertThat(SlotCounts.NAMES).containsExactly("blocks", "gpu", "cpu", "storage", "other");
    assertThat(lua.subList(5, 10)).containsExactly(1L, 2L, -1L, -1L, 0L);
  }

  /**
   * Two routes: to pod digest 0x0a.. until 1 733 500 000 123 ms over 20 blocks (keys of blocks 16
   * and 20 kept), and to pod digest 0x0b.. until 1 733 500 009 999 over 1 block (its key kept).
   */
  private static final String ROUTES =
      "0a0a0a0a0a0a0a0a"
          + "01939ca6d77b"
          + "0014"
          + "1616161616161616"
          + "2020202020202020"
          + "0b0b0b0b0b0b0b0b"
          + "01939ca6fe0f"
          + "0001"
          + "0101010101010101";

  private static final RouteValue ROUTE_VALUE =
      new RouteValue(
          List.of(
              new RouteValue.Route(
                  0x0a0a0a0a0a0a0a0aL,
                  1_733_500_000_123L,
                  20,
                  List.of(0x1616161616161616L, 0x2020202020202020L)),
              new RouteValue.Route(
                  0x0b0b0b0b0b0b0b0bL, 1_733_500_009_999L, 1, List.of(0x0101010101010101L))));

  /** A route over 20 blocks whose keys are 0x0101.. to 0x2020..: what a speculate call gives. */
  private static long[] twentyKeys() {
    long[] keys = new long[20];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = 0x0101010101010101L * (i + 1);
    }
    return keys;
  }

  @Test
  void routeValue_javaEncodes_luaDecodes() {
    byte[] encoded = ROUTE_VALUE.encode();
    assertThat(HEX.formatHex(encoded)).isEqualTo(ROUTES);
    List<Object> routes =
        eval(
            HEX_FUNCTION
                + """
                local v, out, at = ARGV[1], {}, 1
                while true do
                  local pod, deadline, after = routeAt(v, at)
                  if not pod then break end
                  out[#out + 1] = hex(pod)
                  out[#out + 1] = string.format('%d', deadline)
                  out[#out + 1] = hex(string.sub(v, at + ROUTE_HEADER, after - 1))
                  at = after
                end
                out[#out + 1] = ROUTE_KEY_EVERY
                return out
                """,
            ScriptOutputType.MULTI,
            encoded);
    assertThat(routes).hasSize(7);
    assertThat(text(routes.get(0))).isEqualTo("0a0a0a0a0a0a0a0a");
    assertThat(text(routes.get(1))).isEqualTo("1733500000123");
    assertThat(text(routes.get(2))).isEqualTo("16161616161616162020202020202020");
    assertThat(text(routes.get(3))).isEqualTo("0b0b0b0b0b0b0b0b");
    assertThat(text(routes.get(4))).isEqualTo("1733500009999");
    assertThat(text(routes.get(5))).isEqualTo("0101010101010101");
    assertThat(routes.get(6)).isEqualTo((long) RouteValue.KEY_EVERY);
  }

  @Test
  void routeValue_luaEncodes_javaDecodes() {
    byte[] first = RouteValue.blocksAndKeys(twentyKeys(), 0, 20);
    byte[] second = RouteValue.blocksAndKeys(twentyKeys(), 0, 1);
    assertThat(HEX.formatHex(first)).isEqualTo("0014" + "1010101010101010" + "1414141414141414");
    byte[] encoded =
        eval(
            "return encodeRoute(ARGV[1], tonumber(ARGV[2]), ARGV[3])"
                + " .. encodeRoute(ARGV[4], tonumber(ARGV[5]), ARGV[6])",
            ScriptOutputType.VALUE,
            HEX.parseHex("0a0a0a0a0a0a0a0a"),
            Bytes.ascii(1_733_500_000_123L),
            first,
            HEX.parseHex("0b0b0b0b0b0b0b0b"),
            Bytes.ascii(1_733_500_009_999L),
            second);
    RouteValue decoded = RouteValue.decode(encoded);
    assertThat(decoded)
        .isEqualTo(
            new RouteValue(
                List.of(
                    new RouteValue.Route(
                        0x0a0a0a0a0a0a0a0aL,
                        1_733_500_000_123L,
                        20,
                        List.of(0x1010101010101010L, 0x1414141414141414L)),
                    new RouteValue.Route(
                        0x0b0b0b0b0b0b0b0bL,
                        1_733_500_009_999L,
                        1,
                        List.of(0x0101010101010101L)))));
    assertThat(HEX.formatHex(decoded.encode())).isEqualTo(HEX.formatHex(encoded));
  }

  @Test
  void routeValue_cutShort_rejectedInJava_endsTheWalkInLua() {
    byte[] cut = java.util.Arrays.copyOf(ROUTE_VALUE.encode(), 20);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> RouteValue.decode(cut))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("cut short");
    Long routes =
        eval(
            """
            local n, at = 0, 1
            while routeAt(ARGV[1], at) do
              local _, _, after = routeAt(ARGV[1], at)
              n, at = n + 1, after
            end
            return n
            """,
            ScriptOutputType.INTEGER,
            java.util.Arrays.copyOf(ROUTE_VALUE.encode(), 15));
    assertThat(routes).isZero();
  }

  private static final String HEX_FUNCTION =
      """
      local function hex(s)
        return (string.gsub(s, '.', function(c) return string.format('%02x', string.byte(c)) end))
      end
      """;

  private static String text(Object bulk) {
    return new String((byte[]) bulk, StandardCharsets.US_ASCII);
  }
}
