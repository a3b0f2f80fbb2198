package io.kvindex.index.redis;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.hash.TokenKeys;
import io.kvindex.index.ApplyPlan;
import io.kvindex.index.CacheLayout;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Tier;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Packs a batch's events into one binary script argument each (the layouts apply.lua reads):
 *
 * <pre>
 * 'C'                                     AllBlocksCleared
 * 'S'     tier(1) group(2) hasParent(1) parent(8) hash(8)*n   engine-key store
 * 'A'     tier(1) group(2) anchor(2) hash(8)*n   engine-key store of a sparse group
 * 'M'     tier(1) group(2) anchor(2) hash(8)*n   the same, of the first sparse group of its spec
 * 'R'     tier(1) group(2) hash(8)*n      engine-key remove
 * 'Q'     tier(1) group(2) hash(8)*n      token-key remove (hashes resolved through the stream's map)
 * 'T'     tier(1) group(2) hasParent(1) parent(8) root(8) blockSize(4) n(4) hash(8)*n token(4)*n*bs
 *         (hasParent 2: the rest of a store split at a chunk's end)
 * </pre>
 *
 * Events with no blocks are left out; token-mode stores whose token count is not blocks x block
 * size are left out and counted as dropped. A call is packed in the chunks its {@link ApplyPlan}
 * cuts (at most a given number of blocks each, an AllBlocksCleared counting one, a token-mode
 * stored block two), one apply call each: a long event is split at the plan's cuts into consecutive
 * pieces, each store's parent the previous piece's last block, so the chunks applied in order write
 * exactly what the whole call would. A call always has at least one chunk (an empty one moves the
 * watermark).
 *
 * <p>An engine-key store of a sparse cache group ({@code kv_cache_spec_kind} sliding window,
 * chunked local or Mamba) is packed as 'A', or 'M' when its group is the first of its spec among
 * the call's stores ({@link #firstOfEachSpec}), with its <b>anchor</b>: the lowest full-attention
 * group among the call's stores, else the one the writer knows for the model (its last call with
 * one, or the model's recorded cache layout), whose block of the same key locates each of its
 * blocks (apply.lua, storeLocatedBy). With none known it is packed with the anchor 65535, and its
 * blocks stay unlocated (lookups of the index group read block fields until they go); a model known
 * to have no full-attention group (sparse groups alone, which the hybrid rule does not score) is
 * packed as 'S', located by its own chain. So that the anchor's blocks are there first, each run of
 * consecutive stores is packed with the anchor group's first (stores of other groups touch other
 * fields: their order between them changes nothing else).
 *
 * <p>Each chunk covers a range of the call's <b>positions</b> ({@link ApplyPlan#positions}: its
 * events' blocks counted in order, an AllBlocksCleared one, each stored or removed block one, a
 * store left out none), whatever the chunk size. Positions do not depend on the order of the stores
 * in a run, nor do the plan's cuts (every position of a run of stores weighs the same), so the
 * anchor's stores packed first fall in the plan's chunks as they are. The <b>digest</b> names the
 * events themselves (SHA-256 of their kinds, tiers, groups, parents, hashes and tokens; the first
 * 16 bytes in hex), not how they are cut. A call left between two chunks is resumed by (digest,
 * position), so a writer that packs the same events in other chunks goes on from the block the last
 * chunk applied ended at ({@link #pack(ApplyPlan, String, int, long, int)} packs from there).
 * Thread-safe (stateless).
 */
final class EventPacker {
  private EventPacker() {}

  /** One apply call's events: positions {@code from} to {@code to} (exclusive) of the call. */
  record Chunk(long from, long to, List<byte[]> events) {}

  /**
   * The chunks of a call from some position on, in order; the positions of the whole call, its
   * digest, the blocks dropped while packing, and the anchor its sparse stores were packed with
   * ({@link #NO_ANCHOR}: none).
   */
  record Packed(List<Chunk> chunks, long blocks, String digest, int dropped, int anchor) {
    /** The packed events of a batch that fits in one chunk (tests). */
    List<byte[]> events() {
      return chunks.stream().flatMap(c -> c.events().stream()).toList();
    }

    /** The chunk that starts at {@code position}, or null. */
    Chunk startingAt(long position) {
      for (Chunk c : chunks) {
        if (c.from() == position) {
          return c;
        }
      }
      return null;
    }
  }

  /** The events of one batch (tests): {@link #pack(ApplyPlan, String, int, long, int)}. */
  static Packed pack(KeyMode mode, String model, List<KvEvent> events, int chunkBlocks) {
    return pack(mode, model, events, chunkBlocks, 0);
  }

  static Packed pack(
      KeyMode mode, String model, List<KvEvent> events, int chunkBlocks, long start) {
    return pack(mode, model, events, chunkBlocks, start, NO_ANCHOR);
  }

  static Packed pack(
      KeyMode mode,
      String model,
      List<KvEvent> events,
      int chunkBlocks,
      long start,
      int knownAnchor) {
    ApplyPlan plan = ApplyPlan.of(mode, 0, KvEventBatch.of(0, events, null));
    return pack(plan, model, chunkBlocks, start, knownAnchor);
  }

  /**
   * The plan's chunks from position {@code start} on, cut where the plan cuts them (a store that
   * {@code start} falls inside goes on from its block there, as a chunk boundary would have split
   * it).
   *
   * @param knownAnchor the model's anchor as the writer knows it, for a call whose stores name none
   *     ({@link #NO_ANCHOR}: not known; {@link #OWN_CHAIN}: the model has none)
   * @throws IllegalArgumentException if an event holds what the index cannot store (a cache group
   *     outside [0, 65535], a negative token id)
   */
  static Packed pack(ApplyPlan plan, String model, int chunkBlocks, long start, int knownAnchor) {
    KeyMode mode = plan.mode();
    List<KvEvent> events = plan.batch().events();
    Chunks out = new Chunks(plan.chunks(chunkBlocks, start), firstOfEachSpec(events));
    EventDigest digest = new EventDigest();
    long position = 0;
    int own = anchorOf(events);
    int anchor = own != NO_ANCHOR ? own : knownAnchor;
    for (KvEvent event : anchorsFirst(events, anchor)) {
      int blocks = ApplyPlan.positions(mode, event);
      if (blocks == 0) {
        continue;
      }
      int eventAnchor = mode == KeyMode.ENGINE && sparse(event) ? anchor : OWN_CHAIN;
      digest.add(mode, model, event, eventAnchor);
      int offset = (int) Math.max(0, start - position);
      position += blocks;
      if (offset < blocks) {
        packFrom(mode, model, event, offset, eventAnchor, out);
      }
    }
    return new Packed(out.done(), plan.positions(), digest.hex(), plan.dropped(), anchor);
  }

  /** The anchor of a call without a full-attention store, when the model's is not known. */
  static final int NO_ANCHOR = 0xFFFF;

  /** The anchor of a model known to have no full-attention group: its own chain locates it. */
  static final int OWN_CHAIN = -1;

  /**
   * The anchor of the call's sparse stores: its lowest full-attention group that stores ({@code
   * kv_cache_spec_kind} given and of full attention), or {@link #NO_ANCHOR}.
   */
  static int anchorOf(List<KvEvent> events) {
    int anchor = NO_ANCHOR;
    for (KvEvent event : events) {
      if (event instanceof BlockStored s
          && s.kvCacheSpecKind() != null
          && CacheLayout.Kind.of(s.kvCacheSpecKind()) == CacheLayout.Kind.FULL) {
        anchor = Math.min(anchor, s.cacheGroup());
      }
    }
    return anchor;
  }

  /** Whether the events hold a store of a sparse cache group. */
  static boolean anySparse(List<KvEvent> events) {
    for (KvEvent event : events) {
      if (sparse(event)) {
        return true;
      }
    }
    return false;
  }

  /**
   * The sparse groups the call stores that are the first (lowest index) of their spec (kind, block
   * size, window) among its stores: packed as 'M', so that apply.lua keeps their slots in the
   * anchor's segments (the groups a hybrid lookup reads; a spec's other groups, such as Gemma's
   * identical sliding-window groups, keep segments of their own).
   */
  static Set<Integer> firstOfEachSpec(List<KvEvent> events) {
    Map<List<Object>, Integer> first = new HashMap<>();
    for (KvEvent event : events) {
      if (sparse(event)) {
        BlockStored s = (BlockStored) event;
        Integer window = s.kvCacheSpecSlidingWindow();
        List<Object> spec =
            List.of(
                CacheLayout.Kind.of(s.kvCacheSpecKind()),
                s.blockSize(),
                window == null ? 0 : window);
        first.merge(spec, s.cacheGroup(), Math::min);
      }
    }
    return Set.copyOf(first.values());
  }

  /** Whether an event is a store of a sparse cache group (located by the anchor's blocks). */
  private static boolean sparse(KvEvent event) {
    if (!(event instanceof BlockStored s)) {
      return false;
    }
    CacheLayout.Kind kind = CacheLayout.Kind.of(s.kvCacheSpecKind());
    return kind == CacheLayout.Kind.SLIDING_WINDOW
        || kind == CacheLayout.Kind.CHUNKED_LOCAL
        || kind == CacheLayout.Kind.MAMBA;
  }

  /**
   * The events with each run of consecutive stores reordered, the anchor group's first (the list
   * itself when no sparse store comes before one of the anchor's in a run).
   */
  private static List<KvEvent> anchorsFirst(List<KvEvent> events, int anchor) {
    if (anchor == NO_ANCHOR || anchor == OWN_CHAIN || !sparseBeforeAnchor(events, anchor)) {
      return events;
    }
    List<KvEvent> out = new ArrayList<>(events.size());
    List<KvEvent> others = new ArrayList<>();
    for (KvEvent event : events) {
      if (!(event instanceof BlockStored s)) {
        out.addAll(others);
        others.clear();
        out.add(event);
      } else if (s.cacheGroup() == anchor) {
        out.add(event);
      } else {
        others.add(event);
      }
    }
    out.addAll(others);
    return out;
  }

  private static boolean sparseBeforeAnchor(List<KvEvent> events, int anchor) {
    boolean sparseSeen = false;
    for (KvEvent event : events) {
      if (!(event instanceof BlockStored s)) {
        sparseSeen = false;
      } else if (s.cacheGroup() == anchor) {
        if (sparseSeen) {
          return true;
        }
      } else if (sparse(s)) {
        sparseSeen = true;
      }
    }
    return false;
  }

  /** Packs the event from its block {@code offset} on; a sparse store with {@code anchor} >= 0. */
  private static void packFrom(
      KeyMode mode, String model, KvEvent event, int offset, int anchor, Chunks out) {
    if (event instanceof AllBlocksCleared) {
      out.add(new byte[] {'C'}, 1);
    } else if (event instanceof BlockRemoved r) {
      char kind = mode == KeyMode.TOKEN ? 'Q' : 'R';
      Tier tier = Tier.of(r.medium());
      int group = r.cacheGroup();
      List<Long> hashes = r.blockHashes();
      for (int from = offset; from < hashes.size(); ) {
        int to = from + Math.min(out.room(), hashes.size() - from);
        out.add(removed(kind, tier, group, hashes.subList(from, to)), to - from);
        from = to;
      }
    } else if (event instanceof BlockStored s) {
      int group = s.cacheGroup();
      List<Long> hashes = s.blockHashes();
      for (int from = offset; from < hashes.size(); ) {
        int to = from + Math.min(out.room(), hashes.size() - from);
        Long parent = from == 0 ? s.parentBlockHash() : hashes.get(from - 1);
        if (mode == KeyMode.ENGINE) {
          out.store(Tier.of(s.medium()), group, anchor, parent, hashes.subList(from, to));
        } else {
          byte[] piece = tokenStored(model, s, group, parent, from > 0, from, to);
          out.add(piece, to - from);
        }
        from = to;
      }
    }
  }

  /**
   * Chunks being filled, each over the positions its plan's chunk covers. An engine-key store that
   * goes on from the chunk's last one (its parent is that store's last block, same tier and group:
   * the consecutive batches of a stream applied as one) extends it, so the script walks the chain
   * once.
   */
  private static final class Chunks {
    private final List<ApplyPlan.Chunk> cuts;
    private final List<Chunk> chunks = new ArrayList<>();
    private List<byte[]> current = new ArrayList<>();
    private int at;
    private long position;

    /** The current chunk's last event when it is an engine-key store, not packed yet. */
    private Tier openTier;

    private int openGroup;
    private int openAnchor;
    private Long openParent;
    private final List<Long> openHashes = new ArrayList<>();

    /** The sparse groups packed as 'M' ({@link #firstOfEachSpec}). */
    private final Set<Integer> firstOfSpec;

    Chunks(List<ApplyPlan.Chunk> cuts, Set<Integer> firstOfSpec) {
      this.cuts = cuts;
      this.firstOfSpec = firstOfSpec;
      this.position = cuts.get(0).from();
    }

    /** Blocks the current chunk still takes (a full one is closed first). */
    int room() {
      if (position >= cuts.get(at).to()) {
        if (at == cuts.size() - 1) {
          throw new IllegalStateException(
              "packing went past the plan's last chunk at position "
                  + position
                  + ": a bug, please report it");
        }
        close();
        chunks.add(new Chunk(cuts.get(at).from(), cuts.get(at).to(), current));
        current = new ArrayList<>();
        at++;
      }
      return (int) (cuts.get(at).to() - position);
    }

    /** An event that covers {@code blocks} positions. */
    void add(byte[] event, int blocks) {
      room();
      close();
      current.add(event);
      position += blocks;
    }

    /** An engine-key store; {@code anchor} >= 0 for a sparse group's (located by the anchor). */
    void store(Tier tier, int group, int anchor, Long parent, List<Long> hashes) {
      room();
      boolean goesOn =
          openTier == tier
              && openGroup == group
              && openAnchor == anchor
              && (anchor >= 0
                  || parent != null && parent.equals(openHashes.get(openHashes.size() - 1)));
      if (!goesOn) {
        close();
        openTier = tier;
        openGroup = group;
        openAnchor = anchor;
        openParent = parent;
      }
      openHashes.addAll(hashes);
      position += hashes.size();
    }

    /** Packs the open store, if any. */
    private void close() {
      if (openTier != null) {
        current.add(
            openAnchor >= 0
                ? anchored(
                    openTier, openGroup, openAnchor, firstOfSpec.contains(openGroup), openHashes)
                : stored(openTier, openGroup, openParent, openHashes));
        openTier = null;
        openHashes.clear();
      }
    }

    List<Chunk> done() {
      close();
      ApplyPlan.Chunk last = cuts.get(at);
      if (at != cuts.size() - 1 || position != last.to()) {
        throw new IllegalStateException(
            "packing ended at position "
                + position
                + ", not at the plan's end, "
                + cuts.get(cuts.size() - 1).to()
                + ": a bug, please report it");
      }
      chunks.add(new Chunk(last.from(), last.to(), current));
      return chunks;
    }
  }

  private static byte[] removed(char kind, Tier tier, int cacheGroup, List<Long> hashes) {
    ByteBuffer buf = header(kind, tier, cacheGroup, 8 * hashes.size());
    hashes.forEach(buf::putLong);
    return buf.array();
  }

  private static byte[] stored(Tier tier, int cacheGroup, Long parent, List<Long> hashes) {
    ByteBuffer buf = header('S', tier, cacheGroup, 9 + 8 * hashes.size());
    buf.put((byte) (parent == null ? 0 : 1));
    buf.putLong(parent == null ? 0 : parent);
    hashes.forEach(buf::putLong);
    return buf.array();
  }

  private static byte[] anchored(
      Tier tier, int cacheGroup, int anchor, boolean firstOfSpec, List<Long> hashes) {
    ByteBuffer buf = header(firstOfSpec ? 'M' : 'A', tier, cacheGroup, 2 + 8 * hashes.size());
    buf.putShort((short) anchor);
    hashes.forEach(buf::putLong);
    return buf.array();
  }

  /**
   * Blocks {@code from} to {@code to} (exclusive) of a token-mode store, with their tokens; a
   * continuation (hasParent 2) is dropped by the script if the piece before it was.
   */
  private static byte[] tokenStored(
      String model,
      BlockStored s,
      int cacheGroup,
      Long parent,
      boolean continuation,
      int from,
      int to) {
    int n = to - from;
    int bs = s.blockSize();
    ByteBuffer buf = header('T', Tier.of(s.medium()), cacheGroup, 25 + 8 * n + 4 * n * bs);
    buf.put((byte) (continuation ? 2 : parent == null ? 0 : 1));
    buf.putLong(parent == null ? 0 : parent);
    buf.putLong(TokenKeys.root(model, s.loraName()));
    buf.putInt(bs).putInt(n);
    s.blockHashes().subList(from, to).forEach(buf::putLong);
    for (int token : s.tokenIds().subList(from * bs, to * bs)) {
      if (token < 0) {
        throw new IllegalArgumentException("token ids must be >= 0, got " + token);
      }
      buf.putInt(token);
    }
    return buf.array();
  }

  private static ByteBuffer header(char kind, Tier tier, int cacheGroup, int bodyBytes) {
    ByteBuffer buf = ByteBuffer.allocate(4 + bodyBytes);
    buf.put((byte) kind).put((byte) tier.bit()).putShort((short) cacheGroup);
    return buf;
  }
}
