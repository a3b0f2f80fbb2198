package io.kvindex.index.redis;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.hash.TokenKeys;
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
 * </pre>
 *
 * Events with no blocks are left out; token-mode stores whose token count is not blocks x block
 * size are left out and counted as dropped. Thread-safe (stateless).
 */
final class EventPacker {
  private EventPacker() {}

  /** The packed events and the blocks dropped while packing. */
  record Packed(List<byte[]> events, int dropped) {}

  static Packed pack(KeyMode mode, String model, List<KvEvent> events) {
    List<byte[]> out = new ArrayList<>(events.size());
    int dropped = 0;
    for (KvEvent event : events) {
      if (event instanceof AllBlocksCleared) {
        out.add(new byte[] {'C'});
      } else if (event instanceof BlockRemoved r) {
        if (!r.blockHashes().isEmpty()) {
          out.add(
              hashes(mode == KeyMode.TOKEN ? 'Q' : 'R', Tier.of(r.medium()), r.cacheGroup(), r));
        }
      } else if (event instanceof BlockStored s && !s.blockHashes().isEmpty()) {
        if (mode == KeyMode.ENGINE) {
          out.add(stored(s));
        } else if (s.carriesEveryToken()) {
          out.add(tokenStored(model, s));
        } else {
          dropped += s.blockHashes().size();
        }
      }
    }
    return new Packed(out, dropped);
  }

  private static byte[] hashes(char kind, Tier tier, int cacheGroup, BlockRemoved r) {
    ByteBuffer buf = header(kind, tier, cacheGroup, 8 * r.blockHashes().size());
    r.blockHashes().forEach(buf::putLong);
    return buf.array();
  }

  private static byte[] stored(BlockStored s) {
    ByteBuffer buf =
        header('S', Tier.of(s.medium()), s.cacheGroup(), 9 + 8 * s.blockHashes().size());
    buf.put((byte) (s.parentBlockHash() == null ? 0 : 1));
    buf.putLong(s.parentBlockHash() == null ? 0 : s.parentBlockHash());
    s.blockHashes().forEach(buf::putLong);
    return buf.array();
  }

  private static byte[] tokenStored(String model, BlockStored s) {
    int n = s.blockHashes().size();
    ByteBuffer buf =
        header('T', Tier.of(s.medium()), s.cacheGroup(), 25 + 8 * n + 4 * n * s.blockSize());
    buf.put((byte) (s.parentBlockHash() == null ? 0 : 1));
    buf.putLong(s.parentBlockHash() == null ? 0 : s.parentBlockHash());
    buf.putLong(TokenKeys.root(model, s.loraName()));
    buf.putInt(s.blockSize()).putInt(n);
    s.blockHashes().forEach(buf::putLong);
    for (int token : s.tokenIds()) {
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
