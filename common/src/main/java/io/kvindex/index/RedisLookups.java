package io.kvindex.index;

import io.kvindex.redis.LuaScript;
import io.kvindex.redis.RedisOutcome;
import io.kvindex.redis.ScriptRunner;
import io.lettuce.core.KeyValue;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The read path of {@link RedisPrefixIndex}: one plain HMGET per index group (holder records and
 * block fields of one key, so atomic), lookup.lua while the group's speculation gate is open; see
 * the implementation notes of {@link RedisPrefixIndex}. Caches the candidates' keys, the models'
 * field prefixes and, per group, the pod records last read with the group's slots generation, and
 * keeps per group whether speculation is on. Thread-safe.
 */
final class RedisLookups {
  private static final LuaScript LOOKUP =
      LuaScript.fromResource("lookup", RedisLookups.class, "lookup.lua");

  /**
   * Block fields of a lookup's first read: one round trip for prompts up to this many blocks (4 096
   * tokens at 16 per block). Later reads take 4 times the last, at most {@link #MAX_CHUNK}.
   */
  static final int FIRST_CHUNK = 256;

  static final int MAX_CHUNK = 4096;

  /** Fields every group read starts with: the gate, the slots generation, the unlocated count. */
  private static final int READ_HEADER = 3;

  /** Overflowed segment fields remembered; the set starts afresh past this size. */
  private static final int OVERFLOWED_LIMIT = 1 << 16;

  private final IndexConfig config;
  private final KeySchema keys;
  private final ScriptRunner reads;
  private final RedisClusterAsyncCommands<byte[], byte[]> commands;
  private final ServerClock clock;

  /** Per group, until when (System.currentTimeMillis) lookups take the speculative path. */
  private final AtomicLongArray speculationUntil;

  /** Per group, the pod records last read and the slots generation they were read at. */
  private final AtomicReferenceArray<Records> records;

  /**
   * Pod records read with lookups: each candidate's once per liveness period, or after a change.
   */
  private final Counter recordsRead;

  /** Group lookups read again because some pod's slots changed since the records were cached. */
  private final Counter rereads;

  /** Group lookups that read block fields one by one (see {@link IndexMeters}). */
  private final Counter blockReads;

  /** Group lookups that read some overflowed segment's block fields (see {@link IndexMeters}). */
  private final Counter overflowReads;

  /**
   * Per group, 1 while its last read found unlocated blocks: lookups then read block fields until a
   * read finds none.
   */
  private final AtomicIntegerArray unlocated;

  /** Segment fields found overflowed: lookups read those segments' block fields instead. */
  private final Map<ByteBuffer, Boolean> overflowed = new ConcurrentHashMap<>();

  RedisLookups(
      IndexConfig config,
      KeySchema keys,
      ScriptRunner reads,
      RedisClusterAsyncCommands<byte[], byte[]> commands,
      MeterRegistry registry) {
    this.config = config;
    this.keys = keys;
    this.reads = reads;
    this.commands = commands;
    this.clock = new ServerClock(reads, keys);
    this.speculationUntil = new AtomicLongArray(config.groups());
    this.records = new AtomicReferenceArray<>(config.groups());
    this.unlocated = new AtomicIntegerArray(config.groups());
    this.recordsRead =
        counter(
            registry,
            IndexMeters.LOOKUP_POD_RECORDS,
            "Pod records read with lookups (a router reads each candidate's about once per"
                + " liveness period, and again after a change to any pod's slots)");
    this.rereads =
        counter(
            registry,
            IndexMeters.LOOKUP_REREADS,
            "Group lookups read a second time because a pod's slots changed since this router"
                + " cached the records (a purge, a restart, a first store)");
    this.blockReads =
        counter(
            registry,
            IndexMeters.LOOKUP_BLOCK_READS,
            "Group lookups that read every block field of the prompt: the group holds blocks"
                + " stored with a parent the index did not know, or the keys do not start a"
                + " segment");
    this.overflowReads =
        counter(
            registry,
            IndexMeters.LOOKUP_OVERFLOW_READS,
            "Group lookups that read an overflowed segment (more branches than segmentSlots) as"
                + " its 16 block fields, in the same HMGET as the other segments");
  }

  private Counter counter(MeterRegistry registry, String name, String description) {
    return Counter.builder(name)
        .description(description)
        .tag("index", config.indexName())
        .register(registry);
  }

  /** Looks up every group holding candidates, in parallel, and merges the answers. */
  CompletableFuture<LookupResult> lookup(LookupRequest request) {
    Map<Integer, List<String>> byGroup = new TreeMap<>();
    for (String pod : request.candidatePods()) {
      byGroup
          .computeIfAbsent(podKeys(request.model(), pod).group(), x -> new ArrayList<>())
          .add(pod);
    }
    if (request.blockKeys().isEmpty() || byGroup.isEmpty()) {
      return CompletableFuture.completedFuture(merge(request, List.of()));
    }
    Prompt prompt =
        new Prompt(
            fieldPrefix(request.keyMode(), request.model(), request.cacheGroup()),
            request.blockKeys());
    List<CompletableFuture<Map<String, PodMatch>>> parts = new ArrayList<>();
    byGroup.forEach((g, pods) -> parts.add(lookupGroup(request.model(), g, pods, prompt, false)));
    return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new))
        .thenApply(x -> merge(request, parts.stream().map(CompletableFuture::join).toList()));
  }

  /**
   * One group's lookup; {@code allFresh} reads every candidate's record with the blocks, as the
   * second read after the slots generation moved does, so a lookup takes at most two reads however
   * often the generation moves.
   */
  private CompletableFuture<Map<String, PodMatch>> lookupGroup(
      String model, int g, List<String> pods, Prompt prompt, boolean allFresh) {
    List<PodKeys> candidates = new ArrayList<>(pods.size());
    for (String pod : pods) {
      candidates.add(podKeys(model, pod));
    }
    if (speculationUntil.get(g) > System.currentTimeMillis()) {
      return scriptLookup(g, pods, candidates, prompt.blockFields());
    }
    CompletableFuture<Long> now = clock.nowMillis(g);
    Records known = allFresh ? null : records.get(g);
    // A candidate's cached record serves while the group's slots generation is unchanged and the
    // record's deadline (only ever moved later, except by changes that move the generation) has
    // not passed; the others are read with the blocks.
    long nowMs = now.isDone() ? now.join() : Long.MAX_VALUE;
    List<PodName> names = new ArrayList<>(pods.size());
    List<Integer> fresh = new ArrayList<>();
    for (int i = 0; i < candidates.size(); i++) {
      names.add(new PodName(model, pods.get(i)));
      if (known == null || !known.usable(names.get(i), nowMs)) {
        fresh.add(i);
      }
    }
    if (!fresh.isEmpty()) {
      recordsRead.increment(fresh.size());
    }
    // Segments while the group's blocks are all located; else the first chunk of block fields.
    boolean bySegment = unlocated.get(g) == 0 && !prompt.byBlockFields();
    List<byte[]> payload =
        bySegment ? segmentPlan(prompt) : prompt.blockFields().subList(0, firstChunk(prompt));
    if (!bySegment) {
      blockReads.increment();
    } else if (payload.size() > 1 + prompt.segments()) {
      overflowReads.increment();
    }
    byte[][] head = new byte[READ_HEADER + fresh.size() + payload.size()][];
    head[0] = KeySchema.SPECULATION_FIELD;
    head[1] = KeySchema.SLOTS_GENERATION_FIELD;
    head[2] = KeySchema.UNLOCATED_FIELD;
    for (int i = 0; i < fresh.size(); i++) {
      head[READ_HEADER + i] = candidates.get(fresh.get(i)).holder();
    }
    for (int i = 0; i < payload.size(); i++) {
      head[READ_HEADER + fresh.size() + i] = payload.get(i);
    }
    return reads
        .calls()
        .<List<KeyValue<byte[], byte[]>>>call("lookup", () -> commands.hmget(keys.blocks(g), head))
        .toCompletableFuture()
        .thenCombine(
            now,
            (outcome, ms) -> outcome.isDone() ? headRead(outcome, names, fresh, known, ms) : null)
        .thenCompose(
            read -> {
              if (read == null) {
                return CompletableFuture.completedFuture(null);
              }
              if (read.speculationUntil() >= read.now()) {
                long localUntil =
                    System.currentTimeMillis() + read.speculationUntil() - read.now() + 1;
                speculationUntil.accumulateAndGet(g, localUntil, Math::max);
                return scriptLookup(g, pods, candidates, prompt.blockFields());
              }
              if (read.records() == null) {
                // Some pod's slots changed since the cached records were read: start over with
                // every candidate's record read afresh.
                rereads.increment();
                records.set(g, new Records(read.generation()));
                return lookupGroup(model, g, pods, prompt, true);
              }
              if (read.learned() != known) {
                records.accumulateAndGet(g, read.learned(), Records::newer);
              }
              List<byte[]> values = read.values();
              if (bySegment && !startsAtHead(values.get(0))) {
                // The keys start inside a segment (not at a chain's block 0): by block fields.
                prompt.readByBlockFields();
                return lookupGroup(model, g, pods, prompt, false);
              }
              if (bySegment) {
                values = read.unlocated() > 0 ? null : blockValues(prompt, payload, values);
                if (values == null) {
                  // Unlocated blocks, or a segment that overflowed since: read again by the
                  // new plan (block fields, or those segments' block fields).
                  unlocated.set(g, read.unlocated() > 0 ? 1 : 0);
                  return lookupGroup(model, g, pods, prompt, false);
                }
              } else if (read.unlocated() == 0) {
                unlocated.set(g, 0);
              }
              LookupDecoder decoder = new LookupDecoder(pods, read.records(), config, false);
              decoder.addValues(values);
              if (values.size() >= prompt.length()) {
                return CompletableFuture.completedFuture(decoder.matches());
              }
              return continueLookup(
                  g,
                  pods,
                  candidates,
                  read.generation(),
                  prompt.blockFields(),
                  values.size(),
                  decoder);
            });
  }

  /**
   * The first read of a group lookup: speculation deadline, the slots generation, the candidates'
   * records (null when the cached ones are stale and not all were read), block values, and the
   * records read, to cache.
   */
  private record HeadRead(
      long now,
      long speculationUntil,
      long generation,
      long unlocated,
      List<byte[]> records,
      List<byte[]> values,
      Records learned) {}

  private static HeadRead headRead(
      RedisOutcome<List<KeyValue<byte[], byte[]>>> outcome,
      List<PodName> names,
      List<Integer> fresh,
      Records known,
      long nowMs) {
    List<KeyValue<byte[], byte[]>> reply = outcome.orElseThrow();
    long speculation = decimal(value(reply.get(0)));
    long generation = decimal(value(reply.get(1)));
    long unlocated = decimal(value(reply.get(2)));
    boolean same = known != null && known.generation() == generation;
    Records learned = !same ? new Records(generation) : fresh.isEmpty() ? known : known.copy();
    for (int i = 0; i < fresh.size(); i++) {
      learned.put(names.get(fresh.get(i)), value(reply.get(READ_HEADER + i)));
    }
    List<byte[]> live = null;
    if (same || fresh.size() == names.size()) {
      live = new ArrayList<>(names.size());
      for (PodName name : names) {
        byte[] v = learned.get(name);
        live.add(v != null && v.length >= 8 && deadline(v) >= nowMs ? v : null);
      }
    }
    List<byte[]> values = new ArrayList<>(reply.size() - READ_HEADER - fresh.size());
    for (int i = READ_HEADER + fresh.size(); i < reply.size(); i++) {
      values.add(value(reply.get(i)));
    }
    return new HeadRead(nowMs, speculation, generation, unlocated, live, values, learned);
  }

  private static long decimal(byte[] value) {
    return value == null ? 0 : Long.parseLong(new String(value, StandardCharsets.US_ASCII));
  }

  /**
   * Reads the prompt's next chunk (4 times the last) while some candidate still matches. Each read
   * takes the group's slots generation with the blocks, in one HMGET; if it moved since the first
   * read (a purge, a restart, a first store), the lookup starts again as one lookup.lua call rather
   * than mix two states of the index.
   */
  private CompletableFuture<Map<String, PodMatch>> continueLookup(
      int g,
      List<String> pods,
      List<PodKeys> candidates,
      long generation,
      List<byte[]> fields,
      int from,
      LookupDecoder decoder) {
    if (!decoder.open() || from >= fields.size()) {
      return CompletableFuture.completedFuture(decoder.matches());
    }
    int to = Math.min(fields.size(), from + Math.min(from * 4, MAX_CHUNK));
    byte[][] read = new byte[1 + to - from][];
    read[0] = KeySchema.SLOTS_GENERATION_FIELD;
    for (int i = from; i < to; i++) {
      read[1 + i - from] = fields.get(i);
    }
    return reads
        .calls()
        .<List<KeyValue<byte[], byte[]>>>call("lookup", () -> commands.hmget(keys.blocks(g), read))
        .toCompletableFuture()
        .thenCompose(
            outcome -> {
              if (!outcome.isDone()) {
                return CompletableFuture.completedFuture(null);
              }
              List<KeyValue<byte[], byte[]>> reply = outcome.orElseThrow();
              if (decimal(value(reply.get(0))) != generation) {
                return scriptLookup(g, pods, candidates, fields);
              }
              List<byte[]> values = new ArrayList<>(to - from);
              for (int i = 1; i < reply.size(); i++) {
                values.add(value(reply.get(i)));
              }
              decoder.addValues(values);
              return continueLookup(g, pods, candidates, generation, fields, to, decoder);
            });
  }

  private static int firstChunk(Prompt prompt) {
    return Math.min(prompt.length(), FIRST_CHUNK);
  }

  /**
   * The fields a segment read asks for: the first block's field (its locator shows whether the keys
   * start at a segment head), then each segment's field, or its block fields if overflowed.
   */
  private List<byte[]> segmentPlan(Prompt prompt) {
    List<byte[]> plan = new ArrayList<>(1 + prompt.segments());
    plan.add(prompt.firstBlockField());
    for (int k = 0; k < prompt.segments(); k++) {
      byte[] segment = prompt.segmentField(k);
      if (overflowed.containsKey(ByteBuffer.wrap(segment))) {
        plan.addAll(prompt.blockFields().subList(prompt.segmentStart(k), prompt.segmentEnd(k)));
      } else {
        plan.add(segment);
      }
    }
    return plan;
  }

  /**
   * The prompt's block values from a read by {@link #segmentPlan}, or null if a segment read was
   * found overflowed (remembered, so the next plan reads its block fields).
   */
  private List<byte[]> blockValues(Prompt prompt, List<byte[]> plan, List<byte[]> read) {
    List<byte[]> values = new ArrayList<>(prompt.length());
    int at = 1;
    for (int k = 0; k < prompt.segments(); k++) {
      int start = prompt.segmentStart(k);
      int end = prompt.segmentEnd(k);
      if (plan.get(at) != prompt.segmentField(k)) {
        values.addAll(read.subList(at, at + end - start));
        at += end - start;
        continue;
      }
      byte[] segment = read.get(at++);
      if (segment != null && segment.length == 1 && segment[0] == 'O') {
        if (overflowed.size() >= OVERFLOWED_LIMIT) {
          overflowed.clear();
        }
        overflowed.put(ByteBuffer.wrap(prompt.segmentField(k)), Boolean.TRUE);
        return null;
      }
      values.addAll(SegmentCodec.values(segment, prompt.keys(), start, end));
    }
    return values;
  }

  /**
   * Whether a first block's value allows a segment read: absent (no one holds it), or located at
   * offset 0 of its segment. A value of odd length starts with its locator: head key, offset.
   */
  private static boolean startsAtHead(byte[] first) {
    return first == null || first.length % 2 == 0 || first[LookupDecoder.LOCATOR_BYTES - 1] == 0;
  }

  private static byte[] value(KeyValue<byte[], byte[]> kv) {
    return kv.hasValue() ? kv.getValue() : null;
  }

  /** The liveness deadline at the head of a pod record: ms, 8 bytes big-endian. */
  private static long deadline(byte[] record) {
    long d = 0;
    for (int i = 0; i < 8; i++) {
      d = (d << 8) | (record[i] & 0xff);
    }
    return d;
  }

  /** The lookup while the group's speculation gate is open: lookup.lua reads spec hashes too. */
  private CompletableFuture<Map<String, PodMatch>> scriptLookup(
      int g, List<String> pods, List<PodKeys> candidates, List<byte[]> fields) {
    byte[][] args = new byte[1 + pods.size() + fields.size()][];
    byte[][] k = new byte[2 + pods.size()][];
    k[0] = keys.pods(g);
    k[1] = keys.blocks(g);
    args[0] = RedisPrefixIndex.ascii(pods.size());
    for (int i = 0; i < pods.size(); i++) {
      args[1 + i] = candidates.get(i).field();
      k[2 + i] = candidates.get(i).speculative();
    }
    for (int i = 0; i < fields.size(); i++) {
      args[1 + pods.size() + i] = fields.get(i);
    }
    return reads
        .<List<Object>>run(LOOKUP, ScriptOutputType.MULTI, k, args)
        .thenApply(
            outcome ->
                outcome.isDone()
                    ? LookupDecoder.decodeScriptReply(pods, outcome.orElseThrow(), config)
                    : null)
        .toCompletableFuture();
  }

  /**
   * Pod records of one group as last read (null for a pod with none), all at one slots generation.
   * Not changed once published: a lookup that learns more publishes a copy.
   */
  private static final class Records {
    private final long generation;
    private final Map<PodName, byte[]> byPod;

    Records(long generation) {
      this(generation, new HashMap<>());
    }

    private Records(long generation, Map<PodName, byte[]> byPod) {
      this.generation = generation;
      this.byPod = byPod;
    }

    long generation() {
      return generation;
    }

    /**
     * Whether the cached record may stand for the pod's current one, given that the generation is
     * unchanged: it lists no slot, or its deadline has not passed by Redis's clock.
     */
    boolean usable(PodName pod, long nowMs) {
      if (!byPod.containsKey(pod)) {
        return false;
      }
      byte[] v = byPod.get(pod);
      return v == null || v.length <= 8 || deadline(v) >= nowMs;
    }

    byte[] get(PodName pod) {
      return byPod.get(pod);
    }

    void put(PodName pod, byte[] record) {
      byPod.put(pod, record);
    }

    Records copy() {
      return new Records(
          generation, byPod.size() >= POD_CACHE_LIMIT ? new HashMap<>() : new HashMap<>(byPod));
    }

    /** The later of two: the higher generation, else {@code b}, the one just read. */
    static Records newer(Records a, Records b) {
      return a != null && a.generation > b.generation ? a : b;
    }
  }

  /** A looked-up prompt's keys, with its block and segment fields made once and shared. */
  private static final class Prompt {
    private final byte[] prefix;
    private final long[] keys;
    private final byte[][] segmentFields;
    private List<byte[]> blockFields;
    private volatile boolean byBlockFields;

    Prompt(byte[] prefix, List<Long> keys) {
      this.prefix = prefix;
      this.keys = keys.stream().mapToLong(Long::longValue).toArray();
      this.segmentFields =
          new byte[(this.keys.length + KeySchema.SEGMENT_BLOCKS - 1) / KeySchema.SEGMENT_BLOCKS][];
    }

    int length() {
      return keys.length;
    }

    /** Whether the keys were found to start inside a segment: they are read by block fields. */
    boolean byBlockFields() {
      return byBlockFields;
    }

    void readByBlockFields() {
      byBlockFields = true;
    }

    long[] keys() {
      return keys;
    }

    int segments() {
      return segmentFields.length;
    }

    int segmentStart(int k) {
      return k * KeySchema.SEGMENT_BLOCKS;
    }

    int segmentEnd(int k) {
      return Math.min(keys.length, (k + 1) * KeySchema.SEGMENT_BLOCKS);
    }

    synchronized byte[] segmentField(int k) {
      if (segmentFields[k] == null) {
        segmentFields[k] = KeySchema.segmentField(prefix, keys[segmentStart(k)]);
      }
      return segmentFields[k];
    }

    /** The first key's block field, without making the others (a segment read needs only it). */
    byte[] firstBlockField() {
      return KeySchema.blockField(prefix, keys[0]);
    }

    synchronized List<byte[]> blockFields() {
      if (blockFields == null) {
        List<byte[]> fields = new ArrayList<>(keys.length);
        for (long key : keys) {
          fields.add(KeySchema.blockField(prefix, key));
        }
        blockFields = fields;
      }
      return blockFields;
    }
  }

  private record Scope(KeyMode mode, String model, int cacheGroup) {}

  private final Map<Scope, byte[]> prefixCache = new ConcurrentHashMap<>();

  /** The block-field prefix of a model, cached: computing it takes a SHA-256. */
  private byte[] fieldPrefix(KeyMode mode, String model, int cacheGroup) {
    Scope scope = new Scope(mode, model, cacheGroup);
    byte[] cached = prefixCache.get(scope);
    if (cached == null) {
      if (prefixCache.size() >= POD_CACHE_LIMIT) {
        prefixCache.clear();
      }
      cached = KeySchema.fieldPrefix(KeySchema.scope(mode, model), cacheGroup);
      prefixCache.put(scope, cached);
    }
    return cached;
  }

  /** A pod's group, field and speculative key, cached: lookups need them for every candidate. */
  private record PodKeys(int group, byte[] field, byte[] holder, byte[] speculative) {}

  private record PodName(String model, String pod) {}

  private static final int POD_CACHE_LIMIT = 1 << 16;
  private final Map<PodName, PodKeys> podCache = new ConcurrentHashMap<>();

  private PodKeys podKeys(String model, String pod) {
    PodName name = new PodName(model, pod);
    PodKeys cached = podCache.get(name);
    if (cached == null) {
      if (podCache.size() >= POD_CACHE_LIMIT) {
        podCache.clear();
      }
      cached =
          new PodKeys(
              keys.groupOf(model, pod),
              KeySchema.podField(model, pod),
              KeySchema.holderField(KeySchema.podField(model, pod)),
              keys.speculative(model, pod));
      podCache.put(name, cached);
    }
    return cached;
  }

  private static LookupResult merge(LookupRequest request, List<Map<String, PodMatch>> parts) {
    Map<String, PodMatch> all = new LinkedHashMap<>();
    boolean complete = true;
    for (Map<String, PodMatch> part : parts) {
      if (part == null) {
        complete = false;
      } else {
        all.putAll(part);
      }
    }
    Map<String, PodMatch> ordered = new LinkedHashMap<>();
    for (String pod : request.candidatePods()) {
      PodMatch match = all.get(pod);
      if (match != null) {
        ordered.put(pod, match);
      } else if (parts.isEmpty()) {
        ordered.put(pod, PodMatch.none(pod));
      }
    }
    return new LookupResult(ordered, complete);
  }
}
