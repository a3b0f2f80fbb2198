package io.kvindex.wire;

import static io.kvindex.wire.Pack.pack;
import static io.kvindex.wire.WireFixtures.GOLDEN_0;
import static io.kvindex.wire.WireFixtures.GOLDEN_0_TOKENS;
import static io.kvindex.wire.WireFixtures.goldenStored;
import static io.kvindex.wire.WireFixtures.hex;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.event.BlockHashes;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEventBatch;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The store fields of vLLM's storage tiers: {@code locality}, {@code ownership}, {@code session_id}
 * and the secondary-tier media ({@code STORAGE}, before it {@code FS} and {@code OBJ}); and the
 * {@code locality} of their removals.
 */
class StorageTierFieldsTest {
  /** Golden block 0 stored on a shared storage tier, every field a v0.26+ store can carry. */
  private static final BlockStored REMOTE_STORE =
      new BlockStored(
          List.of(GOLDEN_0),
          null,
          GOLDEN_0_TOKENS,
          16,
          null,
          "STORAGE",
          null,
          List.of(List.of()),
          0,
          "full_attention",
          null,
          "REMOTE",
          "shared-fs",
          "chat-7f3a");

  @Test
  void decode_mapStoreOnASharedStorageTier() {
    KvEventBatch batch = KvEventDecoder.decode(hex("storage-tier-map.hex"));

    assertThat(batch).isEqualTo(KvEventBatch.of(1.5, List.of(REMOTE_STORE), 0));
    BlockStored stored = (BlockStored) batch.events().get(0);
    assertThat(stored.locality()).isEqualTo("REMOTE");
    assertThat(stored.remote()).isTrue();
    assertThat(stored.ownership()).isEqualTo("shared-fs");
    assertThat(stored.sessionId()).isEqualTo("chat-7f3a");
    assertThat(stored.tier()).isEqualTo("STORAGE");
  }

  @Test
  void encode_mapStoreOnASharedStorageTier_byteExact() {
    byte[] bytes =
        KvEventEncoder.of(WireEra.MAP).encode(KvEventBatch.of(1.5, List.of(REMOTE_STORE), 0));

    assertThat(bytes).isEqualTo(hex("storage-tier-map.hex"));
  }

  @Test
  void decode_arrayStoreOf15_fieldsFollowTheSpecFields() {
    KvEventBatch batch = KvEventDecoder.decode(hex("storage-tier-array.hex"));

    assertThat(batch).isEqualTo(KvEventBatch.of(1.5, List.of(REMOTE_STORE), 0));
  }

  @Test
  void decode_arrayStoreOf12To14_takesTheFieldsItCarries() {
    assertThat(arrayStore(12, "REMOTE", "shared-fs", "chat-7f3a"))
        .isEqualTo(goldenStored("STORAGE", List.of(List.of()), 0, "full_attention"));
    assertThat(arrayStore(13, "REMOTE", "shared-fs", "chat-7f3a"))
        .isEqualTo(store("REMOTE", null, null));
    assertThat(arrayStore(14, "LOCAL", "shared-fs", "chat-7f3a"))
        .isEqualTo(store("LOCAL", "shared-fs", null));
    assertThat(arrayStore(15, null, null, null)).isEqualTo(store(null, null, null));
  }

  /** Golden block 0 removed from a shared storage tier: vLLM sends the store's locality again. */
  private static final BlockRemoved REMOTE_REMOVAL =
      new BlockRemoved(BlockHashes.copyOf(List.of(GOLDEN_0)), "STORAGE", 0, "REMOTE");

  @Test
  void decode_mapRemovalFromASharedStorageTier() {
    KvEventBatch batch = KvEventDecoder.decode(hex("storage-tier-removed-map.hex"));

    assertThat(batch).isEqualTo(KvEventBatch.of(1.5, List.of(REMOTE_REMOVAL), 0));
    BlockRemoved removed = (BlockRemoved) batch.events().get(0);
    assertThat(removed.locality()).isEqualTo("REMOTE");
    assertThat(removed.remote()).isTrue();
    assertThat(removed.tier()).isEqualTo("STORAGE");
  }

  @Test
  void encode_mapRemovalFromASharedStorageTier_byteExact() {
    byte[] bytes =
        KvEventEncoder.of(WireEra.MAP).encode(KvEventBatch.of(1.5, List.of(REMOTE_REMOVAL), 0));

    assertThat(bytes).isEqualTo(hex("storage-tier-removed-map.hex"));
  }

  @Test
  void decode_removalWithoutLocality_decodesAsBefore() {
    BlockRemoved removed = (BlockRemoved) KvEventDecoder.decode(hex("map.hex")).events().get(1);

    assertThat(removed.locality()).isNull();
    assertThat(removed.remote()).isFalse();
  }

  @Test
  void decode_removalLocalityOfWrongType_failsNamingTheField() {
    byte[] payload =
        pack()
            .array(3)
            .f64(1.0)
            .array(1)
            .map(3)
            .str("type")
            .str("BlockRemoved")
            .str("block_hashes")
            .array(0)
            .str("locality")
            .integer(1)
            .nil()
            .bytes();

    assertThatThrownBy(() -> KvEventDecoder.decode(payload))
        .isInstanceOf(MalformedEventException.class)
        .hasMessageStartingWith("events[0].locality at byte ")
        .hasMessageEndingWith(
            "expected a locality (LOCAL or REMOTE) (a string or nil), got an integer");
  }

  @Test
  void decode_storeWithoutTheFields_decodesAsBefore() {
    byte[] payload = hex("worked-example-map.hex");

    BlockStored stored = (BlockStored) KvEventDecoder.decode(payload).events().get(0);

    assertThat(stored).isEqualTo(goldenStored("GPU", List.of(List.of()), 0, "full_attention"));
    assertThat(stored.locality()).isNull();
    assertThat(stored.ownership()).isNull();
    assertThat(stored.sessionId()).isNull();
    assertThat(stored.remote()).isFalse();
  }

  @ParameterizedTest
  @ValueSource(strings = {"STORAGE", "FS", "OBJ", "storage"})
  void decode_secondaryTierMedia_keptAsSent(String medium) {
    BlockStored stored = mapStore(medium, "locality", "LOCAL");

    assertThat(stored.medium()).isEqualTo(medium);
    assertThat(stored.tier()).isEqualTo(medium.toUpperCase(java.util.Locale.ROOT));
    assertThat(stored.remote()).isFalse();
  }

  @Test
  void decode_unknownLocality_keptAsTextAndNotRemote() {
    BlockStored unknown = mapStore("STORAGE", "locality", "NEARBY");
    BlockStored lowerCase = mapStore("STORAGE", "locality", "remote");

    assertThat(unknown.locality()).isEqualTo("NEARBY");
    assertThat(unknown.remote()).isFalse();
    assertThat(lowerCase.locality()).isEqualTo("remote");
    assertThat(lowerCase.remote()).isTrue();
  }

  @Test
  void decode_localityOfWrongType_failsNamingTheField() {
    byte[] payload =
        pack()
            .array(3)
            .f64(1.0)
            .array(1)
            .map(5)
            .str("type")
            .str("BlockStored")
            .str("block_hashes")
            .array(0)
            .str("token_ids")
            .array(0)
            .str("block_size")
            .integer(0)
            .str("locality")
            .integer(1)
            .nil()
            .bytes();

    assertThatThrownBy(() -> KvEventDecoder.decode(payload))
        .isInstanceOf(MalformedEventException.class)
        .hasMessageStartingWith("events[0].locality at byte ")
        .hasMessageEndingWith(
            "expected a locality (LOCAL or REMOTE) (a string or nil), got an integer");
  }

  @Test
  void oldConstructor_leavesTheNewFieldsNil() {
    BlockStored old =
        new BlockStored(
            List.of(GOLDEN_0),
            null,
            GOLDEN_0_TOKENS,
            16,
            null,
            "GPU",
            null,
            null,
            null,
            null,
            null);

    assertThat(old.locality()).isNull();
    assertThat(old.ownership()).isNull();
    assertThat(old.sessionId()).isNull();
    assertThat(old.withoutTokenIds().tokenIds()).isEmpty();
  }

  private static BlockStored store(String locality, String ownership, String sessionId) {
    return new BlockStored(
        List.of(GOLDEN_0),
        null,
        GOLDEN_0_TOKENS,
        16,
        null,
        "STORAGE",
        null,
        List.of(List.of()),
        0,
        "full_attention",
        null,
        locality,
        ownership,
        sessionId);
  }

  /** Golden block 0 as an array store of {@code n} elements (12 to 15), trailing fields given. */
  private static BlockStored arrayStore(int n, String locality, String ownership, String session) {
    Pack p = pack().array(3).f64(1.5).array(1).array(n).str("BlockStored");
    p.array(1).integer(GOLDEN_0).nil().array(GOLDEN_0_TOKENS.size());
    GOLDEN_0_TOKENS.forEach(p::integer);
    p.integer(16).nil().str("STORAGE").nil().array(1).nil().integer(0).str("full_attention").nil();
    String[] trailing = {locality, ownership, session};
    for (int i = 12; i < n; i++) {
      if (trailing[i - 12] == null) {
        p.nil();
      } else {
        p.str(trailing[i - 12]);
      }
    }
    return (BlockStored) KvEventDecoder.decode(p.integer(0).bytes()).events().get(0);
  }

  /** A minimal map store with the medium and one more string entry. */
  private static BlockStored mapStore(String medium, String key, String value) {
    byte[] payload =
        pack()
            .array(3)
            .f64(1.0)
            .array(1)
            .map(6)
            .str("type")
            .str("BlockStored")
            .str("block_hashes")
            .array(1)
            .integer(7)
            .str("token_ids")
            .array(0)
            .str("block_size")
            .integer(0)
            .str("medium")
            .str(medium)
            .str(key)
            .str(value)
            .nil()
            .bytes();
    return (BlockStored) KvEventDecoder.decode(payload).events().get(0);
  }
}
