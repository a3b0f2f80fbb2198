package io.kvindex.index.redis;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.hash.TokenKeys;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Tier;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The digest of a call's events: what the index applies of each (its kind, tier, group, parent,
 * hashes and, with token keys, root, block size and tokens), not how they are cut into chunks.
 */
final class EventDigest {
  private final MessageDigest sha256;
  private final ByteBuffer buf = ByteBuffer.allocate(8192);

  EventDigest() {
    try {
      sha256 = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-256", e);
    }
  }

  /** {@code anchor} >= 0: a sparse group's store, located by that group. */
  void add(KeyMode mode, String model, KvEvent event, int anchor) {
    if (event instanceof AllBlocksCleared) {
      room(1).put((byte) 'C');
    } else if (event instanceof BlockRemoved r) {
      header('R', Tier.of(r.medium()), r.cacheGroup(), r.blockHashes().size());
      r.blockHashes().forEach(h -> room(8).putLong(h));
    } else if (event instanceof BlockStored s) {
      header(anchor >= 0 ? 'A' : 'S', Tier.of(s.medium()), s.cacheGroup(), s.blockHashes().size());
      if (anchor >= 0) {
        room(4).putInt(anchor);
      }
      Long parent = s.parentBlockHash();
      room(9).put((byte) (parent == null ? 0 : 1)).putLong(parent == null ? 0 : parent);
      s.blockHashes().forEach(h -> room(8).putLong(h));
      if (mode == KeyMode.TOKEN) {
        room(12).putLong(TokenKeys.root(model, s.loraName())).putInt(s.blockSize());
        s.tokenIds().forEach(t -> room(4).putInt(t));
      }
    }
  }

  private void header(char kind, Tier tier, int group, int blocks) {
    room(10).put((byte) kind).put((byte) tier.bit()).putInt(group).putInt(blocks);
  }

  private ByteBuffer room(int bytes) {
    if (buf.remaining() < bytes) {
      sha256.update(buf.array(), 0, buf.position());
      buf.clear();
    }
    return buf;
  }

  String hex() {
    sha256.update(buf.array(), 0, buf.position());
    return HexFormat.of().formatHex(sha256.digest(), 0, 16);
  }
}
