package io.kvindex.index.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.KeyMode;
import io.kvindex.index.PodMatch;
import io.kvindex.index.Tier;
import io.kvindex.index.redis.CandidateGroup.PodKeys;
import io.kvindex.index.redis.LookupPlanner.Again;
import io.kvindex.index.redis.LookupPlanner.HeadRead;
import io.kvindex.index.redis.LookupPlanner.Read;
import io.kvindex.index.redis.LookupPlanner.Step;
import io.kvindex.index.redis.PodRecords.PodName;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The read planner without Redis: what a lookup reads first from what the router knows of the
 * group, and what each kind of reply makes it read next. The replies are built here byte by byte as
 * the scripts store them; the same decisions against a real Redis are in {@link
 * io.kvindex.index.redis.RedisPrefixIndexTest} and its neighbours.
 */
class LookupPlannerTest {
  private static final String MODEL = "m";
  private static final long NOW = 1_000_000L;
  private static final int GPU = Tier.GPU.bit();
  private static final byte[] PREFIX =
      HashFields.fieldPrefix(HashFields.scope(KeyMode.ENGINE, MODEL), 0);

  private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
  private final LookupPlanner.Counters counters =
      new LookupPlanner.Counters(
          meters.counter("records"),
          meters.counter("rereads"),
          meters.counter("blocks"),
          meters.counter("overflows"));
  private final List<String> resets = new ArrayList<>();
  private final GroupState state =
      new GroupState(0, (g, before, now) -> resets.add(text(before) + "->" + text(now)));

  /** Two candidates: pod a (slot 1) holds the prompt's first {@code depthA} blocks, pod b none. */
  private final CandidateGroup group = candidates("a", "b");

  private static final double[] WEIGHTS = new double[16];

  static {
    Arrays.fill(WEIGHTS, 1.0);
  }

  // ---- the first read, from what the router knows of the group

  static Stream<Arguments> firstReads() {
    return Stream.of(
        // name, prompt blocks, state set-up, expected fields after the 3-field header
        Arguments.of("nothing known: both records, first block, 2 segments", 20, none(), 2 + 1 + 2),
        Arguments.of("a 300-block prompt: 16 segments and 1 span", 300, none(), 2 + 1 + 16 + 1),
        Arguments.of(
            "every prompt unlocated (*): its first 256 block fields",
            300,
            (Consumer<GroupState>) s -> s.unlocatedHeads(new byte[] {'*'}),
            2 + 256),
        Arguments.of(
            "segment 1 overflowed: its 4 block fields in its place",
            20,
            (Consumer<GroupState>) s -> s.markOverflowed(prompt(20).segmentField(1)),
            2 + 1 + 1 + 4));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("firstReads")
  void head_fromWhatTheGroupKnows_readsThese(
      String name, int blocks, Consumer<GroupState> setUp, int payload) {
    setUp.accept(state);
    LookupPlanner planner = planner(prompt(blocks));

    assertThat(planner.next(false)).isEqualTo(Read.HEAD);
    HeadRead read = planner.head(NOW);

    assertThat(read.fields().length).isEqualTo(LookupPlanner.READ_HEADER + payload);
    assertThat(read.fields()[0]).isEqualTo(KeySchema.SLOTS_GENERATION_FIELD);
    assertThat(read.fields()[3]).isEqualTo(group.keys.get(0).holder());
    assertThat(read.routeFields()).isNotEmpty();
  }

  @Test
  void next_afterAPause_verifiesTheNodeFirst_andAnswersNothingIfItIsNotTheSame() {
    LookupPlanner planner = planner(prompt(20));

    assertThat(planner.next(true)).isEqualTo(Read.VERIFY);
    assertThat(planner.verified(false)).isFalse();

    LookupPlanner again = planner(prompt(20));
    assertThat(again.next(true)).isEqualTo(Read.VERIFY);
    assertThat(again.verified(true)).isTrue();
    assertThat(again.next(true)).isEqualTo(Read.HEAD); // verified once per lookup
  }

  // ---- a head read's reply: the answer, or what the next read is

  /** What a head reply holds, changed per case from a plain one. */
  private static final class Reply {
    byte[] generation = ascii("1");
    byte[] unlocated;
    byte[] epoch = ascii("e1");
    byte[] firstBlock;
    byte[] firstSegment;
  }

  static Stream<Arguments> headReplies() {
    return Stream.of(
        Arguments.of("plain: the answer", (Consumer<Reply>) r -> {}, null, 5),
        Arguments.of(
            "the keys start past the chain's block 0 (unlocated first block)",
            (Consumer<Reply>) r -> r.firstBlock = new byte[] {0x00, 0x11},
            Again.NOT_CHAIN_START,
            -1),
        Arguments.of(
            "a segment overflowed since",
            (Consumer<Reply>) r -> r.firstSegment = new byte[] {'O'},
            Again.REPLANNED,
            -1),
        Arguments.of(
            "every head unlocated since",
            (Consumer<Reply>) r -> r.unlocated = new byte[] {'*'},
            Again.REPLANNED,
            -1));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("headReplies")
  void headReply_isTheAnswerOrSaysWhatToReadNext(
      String name, Consumer<Reply> change, Again again, int depthA) {
    Prompt prompt = prompt(20);
    LookupPlanner planner = planner(prompt);
    planner.next(false);
    planner.head(NOW);
    Reply reply = new Reply();
    reply.firstSegment = segment(prompt, 0, 5, entry(1, GPU));
    change.accept(reply);

    Step step = planner.headReply(values(reply, prompt, 2), null, NOW);

    if (again == null) {
      assertThat(step.done()).isTrue();
      PodMatch[] matches = step.matches();
      assertThat(matches[0].depth()).isEqualTo(depthA);
      assertThat(matches[1].depth()).isZero();
      return;
    }
    assertThat(step.done()).isFalse();
    assertThat(step.again()).isEqualTo(again);
    assertThat(planner.next(false)).isEqualTo(Read.HEAD);
    // The next head read goes around what the reply found: by block fields.
    HeadRead next = planner.head(NOW);
    boolean byBlocks = again != Again.REPLANNED || reply.unlocated != null;
    int payload = next.fields().length - LookupPlanner.READ_HEADER;
    assertThat(payload).isEqualTo(byBlocks ? 20 : 1 + 16 + 1);
  }

  @Test
  void headReply_epochChanged_dropsWhatWasKnownAndRereadsEveryRecord() {
    Prompt prompt = prompt(20);
    LookupPlanner first = planner(prompt);
    first.next(false);
    first.head(NOW);
    Reply reply = new Reply();
    assertThat(first.headReply(values(reply, prompt, 2), null, NOW).done()).isTrue();
    assertThat(state.records()).isNotNull();

    LookupPlanner second = planner(prompt);
    second.next(false);
    assertThat(second.head(NOW).fields().length).isEqualTo(3 + 1 + 2); // records cached: none read
    reply.epoch = ascii("e2");
    Step step = second.headReply(valuesWithoutRecords(reply, prompt), null, NOW);

    assertThat(step.again()).isEqualTo(Again.RESET);
    assertThat(resets).containsExactly("e1->e2");
    assertThat(state.records()).isNull();
    second.next(false);
    assertThat(second.head(NOW).fields().length).isEqualTo(3 + 2 + 1 + 2);
  }

  @Test
  void headReply_generationMovedSinceCached_rereadsEveryRecord() {
    Prompt prompt = prompt(20);
    LookupPlanner first = planner(prompt);
    first.next(false);
    first.head(NOW);
    Reply reply = new Reply();
    first.headReply(values(reply, prompt, 2), null, NOW);

    LookupPlanner second = planner(prompt);
    second.next(false);
    second.head(NOW);
    reply.generation = ascii("2");
    Step step = second.headReply(valuesWithoutRecords(reply, prompt), null, NOW);

    assertThat(step.again()).isEqualTo(Again.STALE_RECORDS);
    assertThat(meters.counter("rereads").count()).isEqualTo(1.0);
    assertThat(state.records().generation()).isEqualTo(2);
    second.next(false);
    assertThat(second.head(NOW).fields().length).isEqualTo(3 + 2 + 1 + 2);
  }

  @Test
  void chunk_generationMovedSinceTheHead_readsEverythingWithTheScript() {
    // A 300-block prompt read by block fields: 256 first, then a chunk of the other 44.
    state.unlocatedHeads(new byte[] {'*'});
    Prompt prompt = prompt(300);
    LookupPlanner planner = planner(prompt);
    planner.next(false);
    planner.head(NOW);
    List<byte[]> values = new ArrayList<>();
    values.add(ascii("1"));
    values.add(new byte[] {'*'});
    values.add(ascii("e1"));
    values.add(record(1));
    values.add(record(2));
    for (int i = 0; i < 256; i++) {
      values.add(located(prompt.keys()[0], i, entry(1, GPU)));
    }
    Step head = planner.headReply(values, null, NOW);
    assertThat(head.again()).isEqualTo(Again.MORE);
    assertThat(planner.next(false)).isEqualTo(Read.CHUNK);
    byte[][] chunk = planner.chunk();
    assertThat(chunk.length).isEqualTo(1 + 44);

    List<byte[]> moved = new ArrayList<>();
    moved.add(ascii("2"));
    for (int i = 0; i < 44; i++) {
      moved.add(null);
    }
    assertThat(planner.chunkReply(moved).again()).isEqualTo(Again.GENERATION_MOVED);
    assertThat(planner.next(false)).isEqualTo(Read.SCRIPT);
    assertThat(planner.scriptFields()).hasSize(300);
  }

  @Test
  void chunk_sameGeneration_continuesTheMatch() {
    state.unlocatedHeads(new byte[] {'*'});
    Prompt prompt = prompt(300);
    LookupPlanner planner = planner(prompt);
    planner.next(false);
    planner.head(NOW);
    List<byte[]> values = new ArrayList<>(List.of(ascii("1"), new byte[] {'*'}, ascii("e1")));
    values.add(record(1));
    values.add(record(2));
    for (int i = 0; i < 256; i++) {
      values.add(located(prompt.keys()[0], i, entry(1, GPU)));
    }
    planner.headReply(values, null, NOW);
    planner.next(false);
    planner.chunk();
    List<byte[]> more = new ArrayList<>();
    more.add(ascii("1"));
    for (int i = 256; i < 300; i++) {
      more.add(i < 270 ? located(prompt.keys()[0], i, entry(1, GPU)) : null);
    }

    Step step = planner.chunkReply(more);

    assertThat(step.done()).isTrue();
    assertThat(step.matches()[0].depth()).isEqualTo(270);
  }

  // ---- a hybrid model: the window group's segments read beside the full-attention head

  @Test
  void hybrid_windowSpanOverflowed_nextHeadReadsTheWindowGroupsBlockFields() {
    Prompt prompt = prompt(300);
    LookupPlanner planner = hybridPlanner(prompt);
    planner.next(false);
    // Header, 2 records, first block, 16 segments and a span; then the window group's span (its
    // slots of the first 256 blocks are in the full-attention group's segments).
    assertThat(planner.head(NOW).fields().length).isEqualTo(3 + 2 + 1 + 17 + 1);
    List<byte[]> values = values(new Reply(), prompt, 2);
    values.add(new byte[] {'O'});

    Step step = planner.headReply(values, null, NOW);

    assertThat(step.again()).isEqualTo(Again.HYBRID_OVERFLOW);
    assertThat(planner.next(false)).isEqualTo(Read.HEAD);
    // The window group's block fields, one per unit: 300 blocks, at most 4 800 tokens less one.
    assertThat(planner.head(NOW).fields().length).isEqualTo(3 + 1 + 17 + 299);
  }

  @Test
  void hybrid_fullSegmentOverflowed_nextHeadReadsTheWindowGroupsBlockFieldsThere() {
    Prompt prompt = prompt(20);
    LookupPlanner planner = hybridPlanner(prompt);
    planner.next(false);
    // Header, 2 records, first block, 2 segments, which hold the window group's slots too.
    assertThat(planner.head(NOW).fields().length).isEqualTo(3 + 2 + 1 + 2);
    Reply reply = new Reply();
    reply.firstSegment = new byte[] {'O'};

    Step step = planner.headReply(values(reply, prompt, 2), null, NOW);

    assertThat(step.again()).isEqualTo(Again.REPLANNED);
    assertThat(planner.next(false)).isEqualTo(Read.HEAD);
    // The first segment's 16 block fields in its place, and the window group's block fields of
    // its units there, one per unit.
    assertThat(planner.head(NOW).fields().length).isEqualTo(3 + 1 + 16 + 1 + 16);
  }

  @Test
  void hybrid_windowHeld_theHitIsTheFullAttentionPrefix() {
    Prompt prompt = prompt(20);
    LookupPlanner planner = hybridPlanner(prompt);
    planner.next(false);
    planner.head(NOW);
    Reply reply = new Reply();
    // The window (128 tokens of blocks of 16: 8 blocks) ending at block 12 is held by pod a, its
    // slots (group 1's: offsets from 32) in the full-attention group's segment.
    ByteArrayOutputStream first = new ByteArrayOutputStream();
    first.writeBytes(segment(prompt, 0, 0, 12, 0, entry(1, GPU)));
    first.writeBytes(segment(prompt, 0, 4, 12, 32, entry(1, GPU)));
    reply.firstSegment = first.toByteArray();
    List<byte[]> values = values(reply, prompt, 2);

    Step step = planner.headReply(values, null, NOW);

    assertThat(step.done()).isTrue();
    assertThat(step.matches()[0].depth()).isEqualTo(12);
    assertThat(step.matches()[0].groupTokens()).containsEntry(0, 192).containsEntry(1, 192);
    assertThat(step.matches()[1].depth()).isZero();
  }

  private LookupPlanner hybridPlanner(Prompt prompt) {
    io.kvindex.index.CacheLayout layout =
        new io.kvindex.index.CacheLayout(
            List.of(
                new io.kvindex.index.CacheLayout.Group(0, "full_attention", 16, 0),
                new io.kvindex.index.CacheLayout.Group(1, "sliding_window", 16, 128)));
    HybridPlan hybrid =
        new HybridPlan(
            new io.kvindex.index.HybridHit(layout, 16),
            16,
            prompt.length() * 16,
            prompt.keys(),
            group -> HashFields.fieldPrefix(HashFields.scope(KeyMode.ENGINE, MODEL), group),
            true);
    return new LookupPlanner(state, group, prompt, hybrid, WEIGHTS, counters);
  }

  // ---- building the group, the prompt and the replies

  private LookupPlanner planner(Prompt prompt) {
    return new LookupPlanner(state, group, prompt, null, WEIGHTS, counters);
  }

  private static Consumer<GroupState> none() {
    return s -> {};
  }

  private static CandidateGroup candidates(String... pods) {
    CandidateGroup group = new CandidateGroup(0);
    for (int i = 0; i < pods.length; i++) {
      byte[] field = HashFields.podField(MODEL, pods[i]);
      group.add(
          pods[i],
          new PodKeys(
              new PodName(MODEL, pods[i]),
              0,
              field,
              HashFields.holderField(field),
              KeySchema.podDigest(field)),
          i);
    }
    return group.complete();
  }

  private static Prompt prompt(int blocks) {
    long[] keys = new long[blocks];
    for (int i = 0; i < blocks; i++) {
      keys[i] = 0x1000L + i;
    }
    return new Prompt(PREFIX, keys);
  }

  /** A pod record: its deadline (well ahead), then one stream: (slot, rank 0). */
  private static byte[] record(int slot) {
    return ByteBuffer.allocate(12)
        .putLong(NOW + 60_000)
        .putShort((short) slot)
        .putShort((short) 0)
        .array();
  }

  /** One entry: slot (12 bits) and tier bits (4). */
  private static byte[] entry(int slot, int tiers) {
    return new byte[] {(byte) (slot >>> 4), (byte) ((slot & 0x0f) << 4 | tiers)};
  }

  /** A located block value: its head's key, its position (3 bytes), then its entries. */
  private static byte[] located(long head, int position, byte[] entries) {
    return ByteBuffer.allocate(11 + entries.length)
        .putLong(head)
        .put((byte) (position >>> 16))
        .put((byte) (position >>> 8))
        .put((byte) position)
        .put(entries)
        .array();
  }

  /**
   * Segment {@code k} of the prompt with its first {@code blocks} blocks holding {@code entries}.
   */
  private static byte[] segment(Prompt prompt, int k, int blocks, byte[] entries) {
    return segment(prompt, k, 0, blocks, 0, entries);
  }

  /** Slots of the segment's blocks {@code [from, to)}, their offsets from {@code base}. */
  private static byte[] segment(Prompt prompt, int k, int from, int to, int base, byte[] entries) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int start = prompt.segmentStart(k);
    for (int i = from; i < to; i++) {
      out.write(base + i);
      out.writeBytes(ByteBuffer.allocate(8).putLong(prompt.keys()[start + i]).array());
      out.write(entries.length >>> 8);
      out.write(entries.length);
      out.writeBytes(entries);
    }
    return out.toByteArray();
  }

  /** A head reply by segments with both candidates' records read. */
  private static List<byte[]> values(Reply r, Prompt prompt, int records) {
    List<byte[]> values = new ArrayList<>(header(r));
    for (int i = 1; i <= records; i++) {
      values.add(record(i));
    }
    addPayload(values, r, prompt);
    return values;
  }

  private static List<byte[]> valuesWithoutRecords(Reply r, Prompt prompt) {
    return values(r, prompt, 0);
  }

  private static List<byte[]> header(Reply r) {
    return Arrays.asList(r.generation, r.unlocated, r.epoch);
  }

  private static void addPayload(List<byte[]> values, Reply r, Prompt prompt) {
    values.add(r.firstBlock);
    values.add(r.firstSegment);
    for (int k = 1; k < prompt.segments(); k++) {
      values.add(null);
    }
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }

  private static String text(byte[] b) {
    return b == null ? "" : new String(b, StandardCharsets.US_ASCII);
  }
}
