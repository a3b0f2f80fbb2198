package io.kvindex.index.redis;

import static io.kvindex.index.Events.cleared;
import static io.kvindex.index.Events.hashes;
import static io.kvindex.index.Events.removed;
import static io.kvindex.index.Events.stored;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.ApplyPlan;
import io.kvindex.index.KeyMode;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class EventPackerTest {
  private static final int CHUNK = 128;

  private static EventPacker.Packed pack(KvEvent... events) {
    return EventPacker.pack(KeyMode.ENGINE, "m", List.of(events), CHUNK);
  }

  /** An engine-key store as packed: its kind, tier bit, parent (null: none) and hashes. */
  private record Store(char kind, int tier, Long parent, List<Long> hashes) {
    static Store of(byte[] packed) {
      ByteBuffer buf = ByteBuffer.wrap(packed);
      char kind = (char) buf.get();
      if (!buf.hasRemaining()) {
        return new Store(kind, 0, null, List.of());
      }
      int tier = buf.get();
      buf.getShort(); // cache group
      if (kind != 'S') {
        return new Store(kind, tier, null, List.of());
      }
      boolean hasParent = buf.get() == 1;
      long parent = buf.getLong();
      List<Long> hashes = new ArrayList<>();
      while (buf.hasRemaining()) {
        hashes.add(buf.getLong());
      }
      return new Store(kind, tier, hasParent ? parent : null, hashes);
    }
  }

  private static List<Store> stores(List<byte[]> chunk) {
    return chunk.stream().map(Store::of).toList();
  }

  /** A store of a cache group with its kind, as a hybrid model's engine publishes it. */
  private static BlockStored groupStore(List<Long> hashes, Long parent, int group, String kind) {
    return new BlockStored(
        hashes, parent, List.of(), 16, null, null, null, null, group, kind, null);
  }

  /** The cache group and (for an 'A' or 'M' store) the anchor of packed events. */
  private static List<String> groupsAndAnchors(List<byte[]> chunk) {
    return chunk.stream()
        .map(
            b -> {
              ByteBuffer buf = ByteBuffer.wrap(b);
              char kind = (char) buf.get();
              buf.get();
              int group = buf.getShort();
              return kind == 'A' || kind == 'M'
                  ? kind + "" + group + "@" + buf.getShort()
                  : kind + "" + group;
            })
        .toList();
  }

  @Test
  void pack_sparseGroupsStores_areAnchoredToTheLowestFullAttentionGroup() {
    EventPacker.Packed packed =
        pack(
            groupStore(hashes(100, 8), null, 1, "full_attention"),
            groupStore(hashes(104, 4), 103L, 2, "sliding_window"),
            groupStore(hashes(107, 1), 106L, 3, "mamba"),
            groupStore(hashes(100, 8), null, 4, "full_attention"));

    assertThat(groupsAndAnchors(packed.events())).containsExactly("S1", "M2@1", "M3@1", "S4");
    assertThat(packed.anchor()).isEqualTo(1);
  }

  /**
   * Gemma-like: several sliding-window groups of one spec publish the same blocks; only the first
   * of each spec is packed as 'M' (kept in the anchor's segments, the one lookups read), whatever
   * order the call lists them in.
   */
  @Test
  void pack_sparseGroupsOfOneSpec_onlyTheFirstIsKeptWithTheAnchor() {
    EventPacker.Packed packed =
        pack(
            groupStore(hashes(100, 8), null, 0, "full_attention"),
            windowStore(hashes(104, 4), 103L, 3, 512),
            windowStore(hashes(104, 4), 103L, 2, 1024),
            windowStore(hashes(104, 4), 103L, 1, 512),
            groupStore(hashes(107, 1), 106L, 4, "mamba"));

    assertThat(groupsAndAnchors(packed.events()))
        .containsExactly("S0", "A3@0", "M2@0", "M1@0", "M4@0");
  }

  private static BlockStored windowStore(List<Long> hashes, Long parent, int group, int window) {
    return new BlockStored(
        hashes, parent, List.of(), 16, null, null, null, null, group, "sliding_window", window);
  }

  @Test
  void pack_sparseStoreBeforeItsAnchor_isPackedAfterTheAnchorsStoresOfItsRun() {
    EventPacker.Packed packed =
        pack(
            groupStore(hashes(104, 4), 103L, 1, "sliding_window"),
            groupStore(hashes(100, 8), null, 0, "full_attention"),
            removed(hashes(100, 1), "GPU"),
            groupStore(hashes(204, 4), 203L, 1, "sliding_window"),
            groupStore(hashes(200, 8), null, 0, "full_attention"));

    assertThat(groupsAndAnchors(packed.events())).containsExactly("S0", "M1@0", "R0", "S0", "M1@0");
  }

  @Test
  void pack_sparseStoresWithoutAnAnchorInTheCall_takeTheOneKnown() {
    List<KvEvent> mamba = List.of(groupStore(hashes(104, 4), 103L, 1, "mamba"));

    assertThat(groupsAndAnchors(EventPacker.pack(KeyMode.ENGINE, "m", mamba, CHUNK, 0, 0).events()))
        .containsExactly("M1@0");
    assertThat(
            groupsAndAnchors(
                EventPacker.pack(KeyMode.ENGINE, "m", mamba, CHUNK, 0, EventPacker.OWN_CHAIN)
                    .events()))
        .as("a model without full attention")
        .containsExactly("S1");
    EventPacker.Packed unknown = pack(groupStore(hashes(104, 4), 103L, 1, "mamba"));
    assertThat(groupsAndAnchors(unknown.events())).containsExactly("M1@-1");
    assertThat(unknown.anchor()).isEqualTo(EventPacker.NO_ANCHOR);
  }

  @Test
  void pack_storesGoingOnFromTheLastOne_areOneStoreOfTheWholeChain() {
    EventPacker.Packed packed =
        pack(
            stored(hashes(100, 32), null, "GPU"),
            stored(hashes(132, 32), 131L, "GPU"),
            stored(hashes(164, 8), 163L, "GPU"));

    assertThat(packed.chunks()).hasSize(1);
    assertThat(stores(packed.chunks().get(0).events()))
        .containsExactly(new Store('S', 1, null, hashes(100, 72)));
  }

  @Test
  void pack_storesNotGoingOn_stayApart() {
    EventPacker.Packed packed =
        pack(
            stored(hashes(100, 4), 7L, "GPU"),
            stored(hashes(200, 4), 150L, "GPU"), // another parent
            stored(hashes(204, 4), 203L, "CPU"), // another tier
            stored(hashes(300, 4), null, "CPU"), // a chain's start
            removed(hashes(300, 1), "CPU"),
            stored(hashes(304, 4), 303L, "CPU")); // after a remove: in order, apart

    assertThat(stores(packed.chunks().get(0).events()))
        .containsExactly(
            new Store('S', 1, 7L, hashes(100, 4)),
            new Store('S', 1, 150L, hashes(200, 4)),
            new Store('S', 2, 203L, hashes(204, 4)),
            new Store('S', 2, null, hashes(300, 4)),
            new Store('R', 2, null, List.of()),
            new Store('S', 2, 303L, hashes(304, 4)));
  }

  @Test
  void pack_aChainLongerThanAChunk_goesOnInTheNextChunkFromTheLastBlockPacked() {
    EventPacker.Packed packed =
        pack(
            stored(hashes(1000, 100), null, "GPU"),
            stored(hashes(1100, 100), 1099L, "GPU"),
            cleared(),
            stored(hashes(2000, 10), null, "GPU"));

    assertThat(packed.chunks()).hasSize(2);
    assertThat(stores(packed.chunks().get(0).events()))
        .containsExactly(new Store('S', 1, null, hashes(1000, CHUNK)));
    assertThat(stores(packed.chunks().get(1).events()))
        .containsExactly(
            new Store('S', 1, 1000L + CHUNK - 1, hashes(1000 + CHUNK, 200 - CHUNK)),
            new Store('C', 0, null, List.of()),
            new Store('S', 1, null, hashes(2000, 10)));
  }

  /**
   * Chunks cover consecutive positions of the call (its events' blocks in order, an
   * AllBlocksCleared one), and the digest names the events whatever the chunk size.
   */
  @Test
  void pack_chunksOfAnySize_coverTheSamePositionsUnderOneDigest() {
    List<KvEvent> events =
        List.of(
            removed(hashes(1, 3), "GPU"),
            stored(hashes(1000, 100), null, "GPU"),
            cleared(),
            stored(hashes(2000, 30), null, "GPU"));
    EventPacker.Packed big = EventPacker.pack(KeyMode.ENGINE, "m", events, CHUNK);
    EventPacker.Packed small = EventPacker.pack(KeyMode.ENGINE, "m", events, 16);

    assertThat(big.blocks()).isEqualTo(small.blocks()).isEqualTo(134);
    assertThat(big.digest()).isEqualTo(small.digest()).hasSize(32);
    assertThat(big.chunks()).extracting(EventPacker.Chunk::from).containsExactly(0L, 128L);
    assertThat(big.chunks()).extracting(EventPacker.Chunk::to).containsExactly(128L, 134L);
    for (int i = 1; i < small.chunks().size(); i++) {
      assertThat(small.chunks().get(i).from()).isEqualTo(small.chunks().get(i - 1).to());
    }
    assertThat(small.chunks().get(small.chunks().size() - 1).to()).isEqualTo(134);
    List<KvEvent> other = new ArrayList<>(events);
    other.set(0, removed(hashes(1, 2), "GPU"));
    assertThat(EventPacker.pack(KeyMode.ENGINE, "m", other, CHUNK).digest())
        .isNotEqualTo(big.digest());
  }

  /**
   * Packed from a position inside a store, the store goes on from that block under the one before.
   */
  @Test
  void pack_fromAPositionInsideAStore_goesOnFromThatBlock() {
    List<KvEvent> events =
        List.of(removed(hashes(1, 3), "GPU"), stored(hashes(1000, 100), null, "GPU"));

    EventPacker.Packed rest = EventPacker.pack(KeyMode.ENGINE, "m", events, 64, 50);

    assertThat(rest.blocks()).isEqualTo(103);
    assertThat(rest.chunks()).extracting(EventPacker.Chunk::from).containsExactly(50L);
    assertThat(stores(rest.chunks().get(0).events()))
        .containsExactly(new Store('S', 1, 1046L, hashes(1047, 53)));
  }

  /** A token-mode store without its tokens is dropped: counted, and no position of the call. */
  @Test
  void pack_tokenStoreWithoutItsTokens_droppedAndTakesNoPosition() {
    List<KvEvent> events = List.of(stored(hashes(1, 4), null, "GPU"), removed(hashes(1, 2), "GPU"));

    EventPacker.Packed packed = EventPacker.pack(KeyMode.TOKEN, "m", events, CHUNK);

    assertThat(packed.dropped()).isEqualTo(4);
    assertThat(packed.blocks()).isEqualTo(2);
  }

  /** The hashes of packed events in order (an AllBlocksCleared as -1). */
  private static List<Long> blocksOf(List<byte[]> packed) {
    List<Long> out = new ArrayList<>();
    for (byte[] event : packed) {
      ByteBuffer buf = ByteBuffer.wrap(event);
      char kind = (char) buf.get();
      if (kind == 'C') {
        out.add(-1L);
        continue;
      }
      buf.get(); // tier
      buf.getShort(); // cache group
      if (kind == 'T') {
        buf.position(buf.position() + 1 + 8 + 8 + 4);
        int n = buf.getInt();
        for (int i = 0; i < n; i++) {
          out.add(buf.getLong());
        }
        continue;
      }
      if (kind == 'S') {
        buf.position(buf.position() + 1 + 8);
      }
      while (buf.hasRemaining()) {
        out.add(buf.getLong());
      }
    }
    return out;
  }

  /** A token-mode store of {@code n} blocks with all their tokens (block size 2). */
  private static BlockStored tokenStore(long base, int n) {
    List<Integer> tokens = new ArrayList<>();
    for (int i = 0; i < 2 * n; i++) {
      tokens.add(i);
    }
    return new BlockStored(
        hashes(base, n), null, tokens, 2, null, null, null, null, null, null, null);
  }

  /**
   * The packer cuts a call where its plan does: each chunk covers the plan's positions and holds
   * exactly their blocks, in order (token keys: stored blocks weigh two, the chunk's room odd after
   * a removal or a clear).
   */
  @Test
  void pack_chunksAreThePlansChunks_eachWithItsBlocksInOrder() {
    List<KvEvent> events =
        List.of(
            removed(hashes(1, 1), "GPU"),
            tokenStore(100, 10),
            cleared(),
            stored(hashes(300, 5), null, "GPU"), // no tokens: dropped
            tokenStore(200, 20),
            removed(hashes(400, 3), "GPU"));
    ApplyPlan plan = ApplyPlan.of(KeyMode.TOKEN, 0, KvEventBatch.of(0, events, null));

    EventPacker.Packed packed = EventPacker.pack(plan, "m", 16, 0, EventPacker.NO_ANCHOR);

    assertThat(packed.chunks())
        .extracting(c -> new ApplyPlan.Chunk(c.from(), c.to()))
        .containsExactlyElementsOf(plan.chunks(16))
        .hasSize(4);
    assertThat(packed.blocks()).isEqualTo(plan.positions()).isEqualTo(35);
    assertThat(packed.dropped()).isEqualTo(plan.dropped()).isEqualTo(5);
    List<Long> all = new ArrayList<>();
    for (EventPacker.Chunk chunk : packed.chunks()) {
      List<Long> blocks = blocksOf(chunk.events());
      assertThat(blocks).hasSize((int) (chunk.to() - chunk.from()));
      all.addAll(blocks);
    }
    List<Long> expected = new ArrayList<>(List.of(1L));
    expected.addAll(hashes(100, 10));
    expected.add(-1L);
    expected.addAll(hashes(200, 20));
    expected.addAll(hashes(400, 3));
    assertThat(all).isEqualTo(expected);
  }
}
