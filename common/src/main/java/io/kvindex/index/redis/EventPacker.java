package io.kvindex.index.redis;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.hash.TokenKeys;
import io.kvindex.index.BatchCheck;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Tier;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * Packs a batch's events into one binary script argument each (the layouts apply.lua reads):
 *
 * <pre>
 * 'C'                                     AllBlocksCleared
 * 'S'     tier(1) group(2) hasParent(1) parent(8) hash(8)*n   engine-key store
 * 'R'     tier(1) group(2) hash(8)*n      engine-key remove
 * 'Q'     tier(1) group(2) hash(8)*n      token-key remove (hashes resolved through the stream's map)
 * 'T'     tier(1) group(2) hasParent(1) parent(8) root(8) blockSize(4) n(4) hash(8)*n token(4)*n*bs
 *         (hasParent 2: the rest of a store split at a chunk's end)
 * </pre>
 *
 * Events with no blocks are left out; token-mode stores whose token count is not blocks x block
 * size are left out and counted as dropped. A batch is packed in chunks of at most a given number
 * of blocks (an AllBlocksCleared counts one, a token-mode stored block two), one apply call each: a
 * long event is split into consecutive pieces, each store's parent the previous piece's last block,
 * so the chunks applied in order write exactly what the whole batch would. A batch always has at
 * least one chunk (an empty one moves the watermark). Thread-safe (stateless).
 */
final class EventPacker {
  private EventPacker() {}

  /** The packed events of each chunk, in order, and the blocks dropped while packing. */
  record Packed(List<List<byte[]>> chunks, int dropped) {
    /** The packed events of a batch that fits in one chunk (tests). */
    List<byte[]> events() {
      return chunks.stream().flatMap(List::stream).toList();
    }
  }

  /**
   * @throws IllegalArgumentException if an event holds what the index cannot store (a cache group
   *     outside [0, 65535], a negative token id)
   */
  static Packed pack(KeyMode mode, String model, List<KvEvent> events, int chunkBlocks) {
    Chunks out = new Chunks(chunkBlocks);
    int dropped = 0;
    for (KvEvent event : events) {
      if (event instanceof AllBlocksCleared) {
        out.add(new byte[] {'C'}, 1);
      } else if (event instanceof BlockRemoved r) {
        char kind = mode == KeyMode.TOKEN ? 'Q' : 'R';
        Tier tier = Tier.of(r.medium());
        int group = r.cacheGroup();
        List<Long> hashes = r.blockHashes();
        for (int from = 0; from < hashes.size(); ) {
          int to = from + Math.min(out.room(), hashes.size() - from);
          out.add(removed(kind, tier, group, hashes.subList(from, to)), to - from);
          from = to;
        }
      } else if (event instanceof BlockStored s && !s.blockHashes().isEmpty()) {
        if (mode == KeyMode.TOKEN && !s.carriesEveryToken()) {
          dropped += s.blockHashes().size();
          continue;
        }
        int group = s.cacheGroup();
        List<Long> hashes = s.blockHashes();
        int weight = BatchCheck.storedBlockWeight(mode);
        for (int from = 0; from < hashes.size(); ) {
          int to = from + Math.min(Math.max(1, out.room() / weight), hashes.size() - from);
          Long parent = from == 0 ? s.parentBlockHash() : hashes.get(from - 1);
          if (mode == KeyMode.ENGINE) {
            out.store(Tier.of(s.medium()), group, parent, hashes.subList(from, to));
          } else {
            out.add(tokenStored(model, s, group, parent, from > 0, from, to), weight * (to - from));
          }
          from = to;
        }
      }
    }
    return new Packed(out.done(), dropped);
  }

  /**
   * Chunks being filled, each with at most {@code limit} blocks. An engine-key store that goes on
   * from the chunk's last one (its parent is that store's last block, same tier and group: the
   * consecutive batches of a stream applied as one) extends it, so the script walks the chain once.
   */
  private static final class Chunks {
    private final int limit;
    private final List<List<byte[]>> chunks = new ArrayList<>();
    private List<byte[]> current = new ArrayList<>();
    private int used;

    /** The current chunk's last event when it is an engine-key store, not packed yet. */
    private Tier openTier;

    private int openGroup;
    private Long openParent;
    private final List<Long> openHashes = new ArrayList<>();

    Chunks(int limit) {
      this.limit = limit;
    }

    /** Blocks the current chunk still takes (a full one is closed first). */
    int room() {
      if (used >= limit) {
        close();
        chunks.add(current);
        current = new ArrayList<>();
        used = 0;
      }
      return limit - used;
    }

    void add(byte[] event, int blocks) {
      room();
      close();
      current.add(event);
      used += blocks;
    }

    void store(Tier tier, int group, Long parent, List<Long> hashes) {
      room();
      boolean goesOn =
          openTier == tier
              && openGroup == group
              && parent != null
              && parent.equals(openHashes.get(openHashes.size() - 1));
      if (!goesOn) {
        close();
        openTier = tier;
        openGroup = group;
        openParent = parent;
      }
      openHashes.addAll(hashes);
      used += hashes.size();
    }

    /** Packs the open store, if any. */
    private void close() {
      if (openTier != null) {
        current.add(stored(openTier, openGroup, openParent, openHashes));
        openTier = null;
        openHashes.clear();
      }
    }

    List<List<byte[]>> done() {
      close();
      if (!current.isEmpty() || chunks.isEmpty()) {
        chunks.add(current);
      }
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
