package io.kvindex.wire;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockHashes;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.ExtraKey;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.event.TokenIds;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.msgpack.core.ExtensionTypeHeader;
import org.msgpack.core.MessageFormat;
import org.msgpack.core.MessageInsufficientBufferException;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePackException;
import org.msgpack.core.MessageSizeException;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ValueType;

/*
 * Implementation notes.
 *
 * One instance decodes one payload; it is the cursor, so it is not thread-safe and never shared.
 *
 * Streaming: a MessageUnpacker walks the payload; strings, map keys, tags and bin hashes are read
 * in place from the caller's array (their headers through the unpacker, then their bytes skipped
 * with readPayloadAsReference, which copies nothing for an array input). Map keys and tags are
 * compared as bytes, so the common path builds no String except field values.
 *
 * uint64: MessageUnpacker.unpackLong() throws on values >= 2^63, which block hashes often are, so
 * a UINT64 is read as its 8 raw big-endian bytes; every other integer format goes through
 * unpackLong(), which keeps negative int64 (pre-v0.10.2 hashes) as two's complement.
 *
 * Bounds: every array, map, string and bin header is checked against the bytes that remain before
 * anything is sized from it (an element needs at least one byte, a map entry two), so memory is
 * bounded by the payload. Skipping unknown values is iterative (a counter of pending values, never
 * recursion), so deep nesting cannot overflow the stack. The decoder's own recursion follows the
 * fixed schema depth.
 *
 * Errors: before each value the reader records its offset (`at`) and keeps a cheap description of
 * the field (event index, field name, element indexes); the path string is only built when a
 * MalformedEventException is thrown. Every msgpack-java or other runtime exception is converted at
 * the single entry point, so nothing else escapes.
 *
 * Map events: msgspec writes "type" first, which is checked by peeking at the raw bytes. If it is
 * elsewhere, a second reader scans the same map from its first entry for the tag before the
 * fields are decoded, so unknown tags are skipped whatever their fields hold.
 */
final class PayloadReader {
  private static final byte[] TYPE = ascii("type");
  private static final byte[] TS = ascii("ts");
  private static final byte[] EVENTS = ascii("events");
  private static final byte[] RANK = ascii("data_parallel_rank");
  private static final byte[] BLOCK_STORED = ascii("BlockStored");
  private static final byte[] BLOCK_REMOVED = ascii("BlockRemoved");
  private static final byte[] ALL_BLOCKS_CLEARED = ascii("AllBlocksCleared");
  private static final byte[] BLOCK_HASHES = ascii("block_hashes");
  private static final byte[] PARENT_BLOCK_HASH = ascii("parent_block_hash");
  private static final byte[] TOKEN_IDS = ascii("token_ids");
  private static final byte[] BLOCK_SIZE = ascii("block_size");
  private static final byte[] LORA_ID = ascii("lora_id");
  private static final byte[] MEDIUM = ascii("medium");
  private static final byte[] LORA_NAME = ascii("lora_name");
  private static final byte[] EXTRA_KEYS = ascii("extra_keys");
  private static final byte[] GROUP_IDX = ascii("group_idx");
  private static final byte[] SPEC_KIND = ascii("kv_cache_spec_kind");
  private static final byte[] SPEC_WINDOW = ascii("kv_cache_spec_sliding_window");
  private static final byte[] LOCALITY = ascii("locality");
  private static final byte[] OWNERSHIP = ascii("ownership");
  private static final byte[] SESSION_ID = ascii("session_id");

  private static final int UNKNOWN = 0;
  private static final int STORED = 1;
  private static final int REMOVED = 2;
  private static final int CLEARED = 3;

  private final byte[] buf;
  private final int base;
  private final int length;
  private final int start;
  private final MessageUnpacker in;

  /** Whether stores keep their token ids (else they are read, checked and dropped). */
  private final boolean keepTokenIds;

  private List<KvEvent> events;
  private List<String> skippedTags = List.of();

  /** Where the last string key or tag lies in buf; keyLength -1 when it was not a string. */
  private int keyStart;

  private int keyLength = -1;

  // Error context: rendered into a path only when something fails.
  private long at;
  private int event = -1;
  private String field = "batch";
  private boolean fieldIsKey;
  private int index = -1;
  private int sub = -1;

  /**
   * Reads the payload {@code buf[base, base + length)} from payload offset {@code start}; {@code
   * keepTokenIds} false: stores are decoded with no token ids.
   */
  PayloadReader(byte[] buf, int base, int length, int start, boolean keepTokenIds) {
    this.keepTokenIds = keepTokenIds;
    this.buf = buf;
    this.base = base;
    this.length = length;
    this.start = start;
    this.in = MessagePack.newDefaultUnpacker(buf, base + start, length - start);
  }

  /** Decodes the whole payload as one batch with nothing after it. */
  KvEventBatch readBatch() {
    try {
      KvEventBatch batch = batch();
      event = -1;
      field("batch");
      at = pos();
      if (in.hasNext()) {
        throw fail("expected the end of the payload, found " + (length - at) + " more bytes");
      }
      return batch;
    } catch (MalformedEventException e) {
      throw e;
    } catch (MessageInsufficientBufferException e) {
      throw fail("truncated: the payload ends (at byte " + length + ") inside this value", e);
    } catch (MessageSizeException e) {
      throw fail("declares a size of 2^31 or more, larger than any payload can hold", e);
    } catch (MessagePackException | IOException e) {
      throw fail("not valid msgpack: " + e.getMessage(), e);
    } catch (RuntimeException e) {
      throw fail("cannot decode: " + e, e);
    }
  }

  private KvEventBatch batch() throws IOException {
    MessageFormat f = next();
    if (f.getValueType() == ValueType.ARRAY) {
      return arrayBatch();
    }
    if (f.getValueType() == ValueType.MAP) {
      return mapBatch();
    }
    throw expected("a KVEventBatch (an array [ts, events, rank] or a map)", f);
  }

  private KvEventBatch arrayBatch() throws IOException {
    int n = arrayHeader(2, "the batch array [ts, events, data_parallel_rank]");
    field("ts");
    double ts = timestamp();
    events();
    Integer rank = null;
    if (n > 2) {
      field("data_parallel_rank");
      rank = intOrNil("a data-parallel rank");
    }
    field("batch");
    skip(n - 3L);
    return new KvEventBatch(ts, events, rank, skippedTags);
  }

  private KvEventBatch mapBatch() throws IOException {
    long mapAt = at;
    int n = mapHeader("the batch map {ts, events, data_parallel_rank}");
    double ts = Double.NaN;
    boolean hasTs = false;
    Integer rank = null;
    for (int i = 0; i < n; i++) {
      field("batch");
      key();
      if (keyIs(TS)) {
        field("ts");
        ts = timestamp();
        hasTs = true;
      } else if (keyIs(EVENTS)) {
        events();
      } else if (keyIs(RANK)) {
        field("data_parallel_rank");
        rank = intOrNil("a data-parallel rank");
      } else {
        keyField();
        skip(1);
      }
    }
    at = mapAt;
    field("batch");
    if (!hasTs || events == null) {
      throw fail("the batch map lacks the required key \"" + (hasTs ? "events" : "ts") + "\"");
    }
    return new KvEventBatch(ts, events, rank, skippedTags);
  }

  private void events() throws IOException {
    field("events");
    int n = arrayHeader(0, "the events array");
    events = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      event = i;
      field(null);
      MessageFormat f = next();
      if (f.getValueType() == ValueType.ARRAY) {
        arrayEvent();
      } else if (f.getValueType() == ValueType.MAP) {
        mapEvent();
      } else {
        throw expected("an event (a tagged array or map)", f);
      }
    }
    event = -1;
  }

  // ---- array events ------------------------------------------------------------------------

  private void arrayEvent() throws IOException {
    long eventAt = at;
    int n = arrayHeader(1, "an event array [tag, ...]");
    field("type");
    int tag = tag();
    switch (tag) {
      case STORED -> events.add(arrayStored(n, eventAt));
      case REMOVED -> events.add(arrayRemoved(n, eventAt));
      case CLEARED -> events.add(AllBlocksCleared.INSTANCE);
      default -> skipTag();
    }
    field(null);
    skip(n - (long) fieldsRead(tag, n));
  }

  private static int fieldsRead(int tag, int n) {
    return switch (tag) {
      case STORED -> Math.min(n, 15);
      case REMOVED -> Math.min(n, 4);
      default -> 1;
    };
  }

  private BlockStored arrayStored(int n, long eventAt) throws IOException {
    if (n < 6) {
      at = eventAt;
      field(null);
      throw fail("a BlockStored array has " + n + " elements, expected at least 6");
    }
    BlockHashes hashes = hashes();
    Long parent = parentHash();
    TokenIds tokens = tokenIds();
    int blockSize = blockSize();
    Integer loraId = loraId();
    String medium = n > 6 ? medium() : null;
    String loraName = n > 7 ? loraName() : null;
    List<List<ExtraKey>> extraKeys = n > 8 ? extraKeys() : null;
    Integer groupIdx = n > 9 ? groupIdx() : null;
    String kind = n > 10 ? specKind() : null;
    Integer window = n > 11 ? specWindow() : null;
    String locality = n > 12 ? locality() : null;
    String ownership = n > 13 ? ownership() : null;
    String sessionId = n > 14 ? sessionId() : null;
    return new BlockStored(
        hashes, parent, tokens, blockSize, loraId, medium, loraName, extraKeys, groupIdx, kind,
        window, locality, ownership, sessionId);
  }

  private BlockRemoved arrayRemoved(int n, long eventAt) throws IOException {
    if (n < 2) {
      at = eventAt;
      field(null);
      throw fail("a BlockRemoved array has " + n + " elements, expected at least 2");
    }
    BlockHashes hashes = hashes();
    String medium = n > 2 ? medium() : null;
    Integer groupIdx = n > 3 ? groupIdx() : null;
    return new BlockRemoved(hashes, medium, groupIdx);
  }

  // ---- map events --------------------------------------------------------------------------

  private void mapEvent() throws IOException {
    long eventAt = at;
    int n = mapHeader("an event map");
    int first = 0;
    int tag;
    if (n > 0 && typeKeyIsNext()) {
      field(null);
      key();
      field("type");
      tag = tag();
      first = 1;
    } else {
      tag = tagFromLookahead(n, eventAt);
    }
    switch (tag) {
      case STORED -> events.add(mapStored(first, n, eventAt));
      case REMOVED -> events.add(mapRemoved(first, n, eventAt));
      case CLEARED -> {
        skipEntries(first, n);
        events.add(AllBlocksCleared.INSTANCE);
      }
      default -> {
        String name = tagName();
        skipEntries(first, n);
        skippedTags(name);
      }
    }
  }

  private boolean typeKeyIsNext() {
    int p = base + (int) pos();
    return p + 5 <= base + length
        && buf[p] == (byte) (0xa0 | TYPE.length)
        && Arrays.equals(buf, p + 1, p + 5, TYPE, 0, TYPE.length);
  }

  private int tagFromLookahead(int n, long eventAt) throws IOException {
    PayloadReader ahead = new PayloadReader(buf, base, length, (int) pos(), keepTokenIds);
    ahead.event = event;
    for (int i = 0; i < n; i++) {
      ahead.field(null);
      ahead.key();
      if (ahead.keyIs(TYPE)) {
        ahead.field("type");
        int tag = ahead.tag();
        keyStart = ahead.keyStart;
        keyLength = ahead.keyLength;
        return tag;
      }
      ahead.keyField();
      ahead.skip(1);
    }
    at = eventAt;
    field(null);
    throw fail("an event map has no \"type\" key");
  }

  private BlockStored mapStored(int first, int n, long eventAt) throws IOException {
    BlockHashes hashes = null;
    Long parent = null;
    TokenIds tokens = null;
    int blockSize = -1;
    Integer loraId = null;
    String medium = null;
    String loraName = null;
    List<List<ExtraKey>> extraKeys = null;
    Integer groupIdx = null;
    String kind = null;
    Integer window = null;
    String locality = null;
    String ownership = null;
    String sessionId = null;
    for (int i = first; i < n; i++) {
      field(null);
      key();
      if (keyIs(BLOCK_HASHES)) {
        hashes = hashes();
      } else if (keyIs(PARENT_BLOCK_HASH)) {
        parent = parentHash();
      } else if (keyIs(TOKEN_IDS)) {
        tokens = tokenIds();
      } else if (keyIs(BLOCK_SIZE)) {
        blockSize = blockSize();
      } else if (keyIs(LORA_ID)) {
        loraId = loraId();
      } else if (keyIs(MEDIUM)) {
        medium = medium();
      } else if (keyIs(LORA_NAME)) {
        loraName = loraName();
      } else if (keyIs(EXTRA_KEYS)) {
        extraKeys = extraKeys();
      } else if (keyIs(GROUP_IDX)) {
        groupIdx = groupIdx();
      } else if (keyIs(SPEC_KIND)) {
        kind = specKind();
      } else if (keyIs(SPEC_WINDOW)) {
        window = specWindow();
      } else if (keyIs(LOCALITY)) {
        locality = locality();
      } else if (keyIs(OWNERSHIP)) {
        ownership = ownership();
      } else if (keyIs(SESSION_ID)) {
        sessionId = sessionId();
      } else {
        keyField();
        skip(1);
      }
    }
    at = eventAt;
    field(null);
    requireKey(hashes != null, "BlockStored", "block_hashes");
    requireKey(tokens != null, "BlockStored", "token_ids");
    requireKey(blockSize >= 0, "BlockStored", "block_size");
    return new BlockStored(
        hashes, parent, tokens, blockSize, loraId, medium, loraName, extraKeys, groupIdx, kind,
        window, locality, ownership, sessionId);
  }

  private BlockRemoved mapRemoved(int first, int n, long eventAt) throws IOException {
    BlockHashes hashes = null;
    String medium = null;
    Integer groupIdx = null;
    String locality = null;
    for (int i = first; i < n; i++) {
      field(null);
      key();
      if (keyIs(BLOCK_HASHES)) {
        hashes = hashes();
      } else if (keyIs(MEDIUM)) {
        medium = medium();
      } else if (keyIs(GROUP_IDX)) {
        groupIdx = groupIdx();
      } else if (keyIs(LOCALITY)) {
        locality = locality();
      } else {
        keyField();
        skip(1);
      }
    }
    at = eventAt;
    field(null);
    requireKey(hashes != null, "BlockRemoved", "block_hashes");
    return new BlockRemoved(hashes, medium, groupIdx, locality);
  }

  private void requireKey(boolean present, String type, String key) {
    if (!present) {
      throw fail("a " + type + " map lacks the required key \"" + key + "\"");
    }
  }

  private void skipEntries(int first, int n) throws IOException {
    for (int i = first; i < n; i++) {
      field(null);
      key();
      keyField();
      skip(1);
    }
  }

  // ---- event fields ------------------------------------------------------------------------

  private BlockHashes hashes() throws IOException {
    field("block_hashes");
    int n = arrayHeader(0, "an array of block hashes");
    long[] hashes = new long[n];
    for (int i = 0; i < n; i++) {
      index = i;
      hashes[i] = hash();
    }
    return BlockHashes.of(hashes);
  }

  private Long parentHash() throws IOException {
    field("parent_block_hash");
    return nilNext() ? null : hash();
  }

  private TokenIds tokenIds() throws IOException {
    field("token_ids");
    int n = arrayHeader(0, "an array of token ids");
    int[] tokens = keepTokenIds ? new int[n] : null;
    for (int i = 0; i < n; i++) {
      index = i;
      int token = int32("a token id");
      if (tokens != null) {
        tokens[i] = token;
      }
    }
    return tokens == null ? TokenIds.empty() : TokenIds.of(tokens);
  }

  private int blockSize() throws IOException {
    field("block_size");
    int size = int32("a block size");
    if (size < 0) {
      throw fail("expected a non-negative block size, got " + size);
    }
    return size;
  }

  private Integer loraId() throws IOException {
    field("lora_id");
    return intOrNil("a LoRA id");
  }

  private String medium() throws IOException {
    field("medium");
    return stringOrNil("a medium");
  }

  private String loraName() throws IOException {
    field("lora_name");
    return stringOrNil("a LoRA name");
  }

  private Integer groupIdx() throws IOException {
    field("group_idx");
    return intOrNil("a KV-cache group index");
  }

  private String specKind() throws IOException {
    field("kv_cache_spec_kind");
    return stringOrNil("a KV-cache spec kind");
  }

  private Integer specWindow() throws IOException {
    field("kv_cache_spec_sliding_window");
    return intOrNil("a sliding window");
  }

  private String locality() throws IOException {
    field("locality");
    return stringOrNil("a locality (LOCAL or REMOTE)");
  }

  private String ownership() throws IOException {
    field("ownership");
    return stringOrNil("an ownership (a tier id)");
  }

  private String sessionId() throws IOException {
    field("session_id");
    return stringOrNil("a session id");
  }

  private List<List<ExtraKey>> extraKeys() throws IOException {
    field("extra_keys");
    if (nilNext()) {
      return null;
    }
    int n = arrayHeader(0, "an array of per-block extra keys");
    List<List<ExtraKey>> perBlock = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      index = i;
      sub = -1;
      if (nilNext()) {
        perBlock.add(null);
        continue;
      }
      int m = arrayHeader(0, "nil or an array of extra keys");
      List<ExtraKey> keys = new ArrayList<>(m);
      for (int j = 0; j < m; j++) {
        sub = j;
        keys.add(extraKey());
      }
      perBlock.add(keys);
    }
    return perBlock;
  }

  private ExtraKey extraKey() throws IOException {
    MessageFormat f = next();
    switch (f.getValueType()) {
      case STRING:
        return new ExtraKey.Text(string());
      case BINARY:
        {
          int len = checkedLength(in.unpackBinaryHeader());
          int from = base + (int) pos();
          consume(len);
          return new ExtraKey.Digest(Arrays.copyOfRange(buf, from, from + len));
        }
      case ARRAY:
        {
          int n = arrayHeader(2, "a multimodal key [identifier, offset]");
          MessageFormat id = next();
          if (id.getValueType() != ValueType.STRING) {
            throw expected("a multimodal identifier (a string)", id);
          }
          String identifier = string();
          long offset = integer("a multimodal offset");
          skip(n - 2L);
          return new ExtraKey.Multimodal(identifier, offset);
        }
      default:
        throw expected("an extra key (a string, [string, int] or bin)", f);
    }
  }

  // ---- scalars -----------------------------------------------------------------------------

  private long hash() throws IOException {
    MessageFormat f = next();
    switch (f) {
      case UINT64:
        return uint64();
      case POSFIXINT:
      case NEGFIXINT:
      case UINT8:
      case UINT16:
      case UINT32:
      case INT8:
      case INT16:
      case INT32:
      case INT64:
        return in.unpackLong();
      case BIN8:
      case BIN16:
      case BIN32:
        return binHash();
      default:
        throw expected("a block hash (an integer or a bin of 16 or 32*k bytes)", f);
    }
  }

  private long binHash() throws IOException {
    int len = checkedLength(in.unpackBinaryHeader());
    if (len != 16 && (len == 0 || len % 32 != 0)) {
      throw fail("expected a hash bin of 16 or 32*k bytes, got " + len + " bytes");
    }
    long hash = bigEndianLong(base + (int) pos() + len - 8);
    consume(len);
    return hash;
  }

  /** Reads the 8 raw bytes of a UINT64, which unpackLong() rejects from 2^63 on. */
  private long uint64() throws IOException {
    if (remaining() < 9) {
      throw fail("truncated: a uint64 needs 9 bytes, only " + remaining() + " remain");
    }
    long value = bigEndianLong(base + (int) pos() + 1);
    consume(9);
    return value;
  }

  private long integer(String what) throws IOException {
    MessageFormat f = next();
    if (f == MessageFormat.UINT64) {
      long value = uint64();
      if (value < 0) {
        throw fail("expected " + what + ", got " + Long.toUnsignedString(value) + " (too large)");
      }
      return value;
    }
    if (f.getValueType() != ValueType.INTEGER) {
      throw expected(what + " (an integer)", f);
    }
    return in.unpackLong();
  }

  private int int32(String what) throws IOException {
    long value = integer(what);
    if (value != (int) value) {
      throw fail("expected " + what + " within the 32-bit range, got " + value);
    }
    return (int) value;
  }

  private Integer intOrNil(String what) throws IOException {
    return nilNext() ? null : int32(what);
  }

  private String stringOrNil(String what) throws IOException {
    if (nilNext()) {
      return null;
    }
    MessageFormat f = next();
    if (f.getValueType() != ValueType.STRING) {
      throw expected(what + " (a string or nil)", f);
    }
    return string();
  }

  private double timestamp() throws IOException {
    MessageFormat f = next();
    if (f == MessageFormat.FLOAT64 || f == MessageFormat.FLOAT32) {
      return in.unpackDouble();
    }
    if (f == MessageFormat.UINT64) {
      long bits = uint64();
      return bits >= 0 ? bits : (double) (bits >>> 1) * 2.0 + (bits & 1);
    }
    if (f.getValueType() == ValueType.INTEGER) {
      return in.unpackLong();
    }
    throw expected("a timestamp (a float or an integer)", f);
  }

  /** Reads a string whose header is next; the bytes are decoded straight from the payload. */
  private String string() throws IOException {
    int len = checkedLength(in.unpackRawStringHeader());
    String s = new String(buf, base + (int) pos(), len, StandardCharsets.UTF_8);
    consume(len);
    return s;
  }

  /** Consumes nil and answers true if it is next; records the offset of the next value. */
  private boolean nilNext() throws IOException {
    if (next() == MessageFormat.NIL) {
      in.unpackNil();
      return true;
    }
    return false;
  }

  // ---- tags and keys -----------------------------------------------------------------------

  /** Reads a string tag in place and classifies it. */
  private int tag() throws IOException {
    MessageFormat f = next();
    if (f.getValueType() != ValueType.STRING) {
      throw expected("the event tag (a string)", f);
    }
    stringInPlace();
    if (keyIs(BLOCK_STORED)) {
      return STORED;
    }
    if (keyIs(BLOCK_REMOVED)) {
      return REMOVED;
    }
    return keyIs(ALL_BLOCKS_CLEARED) ? CLEARED : UNKNOWN;
  }

  private String tagName() {
    return new String(buf, keyStart, keyLength, StandardCharsets.UTF_8);
  }

  private void skipTag() {
    skippedTags(tagName());
  }

  private void skippedTags(String name) {
    if (skippedTags.isEmpty()) {
      skippedTags = new ArrayList<>(2);
    }
    skippedTags.add(name);
  }

  /** Reads a map key; a key that is not a string is skipped and matches nothing. */
  private void key() throws IOException {
    MessageFormat f = next();
    if (f.getValueType() == ValueType.STRING) {
      stringInPlace();
    } else {
      keyLength = -1;
      skip(1);
    }
  }

  private void stringInPlace() throws IOException {
    keyLength = checkedLength(in.unpackRawStringHeader());
    keyStart = base + (int) pos();
    consume(keyLength);
  }

  private boolean keyIs(byte[] name) {
    return keyLength == name.length
        && Arrays.equals(buf, keyStart, keyStart + keyLength, name, 0, name.length);
  }

  // ---- structure ---------------------------------------------------------------------------

  private int arrayHeader(int min, String what) throws IOException {
    MessageFormat f = next();
    if (f.getValueType() != ValueType.ARRAY) {
      throw expected(what, f);
    }
    int n = in.unpackArrayHeader();
    long remaining = remaining();
    if (n > remaining) {
      throw fail(what + " claims " + n + " elements but only " + remaining + " bytes remain");
    }
    if (n < min) {
      throw fail(what + " has " + n + " elements, expected at least " + min);
    }
    return n;
  }

  private int mapHeader(String what) throws IOException {
    MessageFormat f = next();
    if (f.getValueType() != ValueType.MAP) {
      throw expected(what, f);
    }
    int n = in.unpackMapHeader();
    long remaining = remaining();
    if (2L * n > remaining) {
      throw fail(what + " claims " + n + " entries but only " + remaining + " bytes remain");
    }
    return n;
  }

  /** Skips {@code count} whole values, iteratively, checking every declared size. */
  private void skip(long count) throws IOException {
    long pending = count;
    while (pending > 0) {
      pending--;
      MessageFormat f = next();
      switch (f.getValueType()) {
        case ARRAY -> pending += arrayHeader(0, "an array");
        case MAP -> pending += 2L * mapHeader("a map");
        case STRING -> consume(checkedLength(in.unpackRawStringHeader()));
        case BINARY -> consume(checkedLength(in.unpackBinaryHeader()));
        case EXTENSION -> {
          ExtensionTypeHeader ext = in.unpackExtensionTypeHeader();
          consume(checkedLength(ext.getLength()));
        }
        default -> in.skipValue();
      }
    }
  }

  private int checkedLength(int len) {
    long remaining = remaining();
    if (len < 0 || len > remaining) {
      throw fail(
          "truncated: the value claims "
              + Integer.toUnsignedString(len)
              + " bytes but only "
              + remaining
              + " remain");
    }
    return len;
  }

  private void consume(int len) throws IOException {
    if (len > 0) {
      in.readPayloadAsReference(len);
    }
  }

  /** Peeks at the next value's format, recording its offset; rejects the unused byte 0xc1. */
  private MessageFormat next() throws IOException {
    at = pos();
    MessageFormat f = in.getNextFormat();
    if (f == MessageFormat.NEVER_USED) {
      throw fail("found byte 0xc1, which msgpack never uses");
    }
    return f;
  }

  private long pos() {
    return start + in.getTotalReadBytes();
  }

  private long remaining() {
    return length - pos();
  }

  private long bigEndianLong(int p) {
    long v = 0;
    for (int i = 0; i < 8; i++) {
      v = (v << 8) | (buf[p + i] & 0xffL);
    }
    return v;
  }

  // ---- errors ------------------------------------------------------------------------------

  private void field(String name) {
    field = name;
    fieldIsKey = false;
    index = -1;
    sub = -1;
  }

  /** Names the current field after the map key just read (rendered only on failure). */
  private void keyField() {
    field(null);
    fieldIsKey = keyLength >= 0;
  }

  private MalformedEventException expected(String what, MessageFormat got) {
    return fail("expected " + what + ", got " + describe(got));
  }

  private static String describe(MessageFormat f) {
    return switch (f.getValueType()) {
      case NIL -> "nil";
      case BOOLEAN -> "a boolean";
      case INTEGER -> "an integer";
      case FLOAT -> "a float";
      case STRING -> "a string";
      case BINARY -> "a bin";
      case ARRAY -> "an array";
      case MAP -> "a map";
      case EXTENSION -> "an ext value";
    };
  }

  private MalformedEventException fail(String problem) {
    return fail(problem, null);
  }

  private MalformedEventException fail(String problem, Throwable cause) {
    return new MalformedEventException(path(), at, problem, cause);
  }

  private String path() {
    StringBuilder path = new StringBuilder();
    if (event >= 0) {
      path.append("events[").append(event).append(']');
    }
    String name = fieldIsKey ? tagName() : field;
    if (name != null) {
      path.append(path.length() > 0 ? "." : "").append(name);
    }
    if (index >= 0) {
      path.append('[').append(index).append(']');
    }
    if (sub >= 0) {
      path.append('[').append(sub).append(']');
    }
    return path.length() == 0 ? "batch" : path.toString();
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }
}
