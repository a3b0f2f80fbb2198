package io.kvindex.wire;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.ExtraKey;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.List;

/** Shared fixtures: golden block 0 of the wire spec and the hand-built hex payloads. */
final class WireFixtures {
  /** Golden block 0 (sha256_cbor, PYTHONHASHSEED=42): 0xf5b600d19aef97ac. */
  static final long GOLDEN_0 = Long.parseUnsignedLong("17705339885301241772");

  /** The 16 token ids of golden block 0. */
  static final List<Integer> GOLDEN_0_TOKENS =
      List.of(
          2082, 1113, 2142, 374, 264, 4948, 19128, 323, 7203, 429, 374, 66351, 938, 315, 11198,
          323);

  private WireFixtures() {}

  /** Reads a fixture: hex bytes, whitespace ignored, "#" starts a comment. */
  static byte[] hex(String resource) {
    try (InputStream in = WireFixtures.class.getResourceAsStream("/wire/" + resource)) {
      if (in == null) {
        throw new IllegalArgumentException("no test resource wire/" + resource);
      }
      return parseHex(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Parses hex with whitespace and "#" comments. */
  static byte[] parseHex(String text) {
    StringBuilder digits = new StringBuilder();
    for (String line : text.split("\n", -1)) {
      int hash = line.indexOf('#');
      digits.append((hash >= 0 ? line.substring(0, hash) : line).replaceAll("\\s+", ""));
    }
    return HexFormat.of().parseHex(digits);
  }

  /** The BlockStored of golden block 0 with every field a later era adds. */
  static BlockStored goldenStored(
      String medium, List<List<ExtraKey>> extraKeys, Integer groupIdx, String kind) {
    return new BlockStored(
        List.of(GOLDEN_0),
        null,
        GOLDEN_0_TOKENS,
        16,
        null,
        medium,
        null,
        extraKeys,
        groupIdx,
        kind,
        null);
  }

  /** The batch each era fixture holds, as that era carries it (written out per era). */
  static KvEventBatch eraBatch(WireEra era) {
    List<List<ExtraKey>> nilEntry = List.of(List.of());
    return switch (era) {
      case V0_9_0 -> batch(goldenStored(null, null, null, null), removed(null, null), null);
      case V0_9_1 -> batch(goldenStored(null, null, null, null), removed(null, null), 0);
      case V0_10_2, V0_14 -> batch(goldenStored("GPU", null, null, null), removed("GPU", null), 0);
      case V0_17 -> batch(goldenStored("GPU", nilEntry, null, null), removed("GPU", null), 0);
      case V0_20 -> batch(goldenStored("GPU", nilEntry, 0, null), removed("GPU", 0), 0);
      case V0_22, MAP ->
          batch(goldenStored("GPU", nilEntry, 0, "full_attention"), removed("GPU", 0), 0);
    };
  }

  /** The richest batch: what the V0_22 and MAP fixtures hold. */
  static KvEventBatch fullBatch() {
    return eraBatch(WireEra.V0_22);
  }

  static String fixtureName(WireEra era) {
    return era == WireEra.MAP ? "map.hex" : era.name().toLowerCase(java.util.Locale.ROOT) + ".hex";
  }

  private static BlockRemoved removed(String medium, Integer groupIdx) {
    return new BlockRemoved(List.of(GOLDEN_0), medium, groupIdx);
  }

  private static KvEventBatch batch(BlockStored stored, BlockRemoved removed, Integer rank) {
    List<KvEvent> events = List.of(stored, removed, AllBlocksCleared.INSTANCE);
    return KvEventBatch.of(1.5, events, rank);
  }
}
