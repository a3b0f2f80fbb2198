package io.kvindex.wire;

import static io.kvindex.wire.Pack.pack;
import static io.kvindex.wire.WireFixtures.GOLDEN_0;
import static io.kvindex.wire.WireFixtures.GOLDEN_0_TOKENS;
import static io.kvindex.wire.WireFixtures.goldenStored;
import static io.kvindex.wire.WireFixtures.hex;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.ExtraKey;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

class KvEventDecoderTest {
  private static final byte[] GOLDEN_0_BYTES = ByteBuffer.allocate(8).putLong(GOLDEN_0).array();

  @ParameterizedTest
  @EnumSource(WireEra.class)
  void decode_eraFixture(WireEra era) {
    KvEventBatch batch = KvEventDecoder.decode(hex(WireFixtures.fixtureName(era)));

    assertThat(batch).isEqualTo(WireFixtures.eraBatch(era));
  }

  @Test
  void decode_workedExampleArrayEra() {
    byte[] payload = hex("worked-example-array.hex");

    KvEventBatch batch = KvEventDecoder.decode(payload);

    assertThat(payload).hasSize(115);
    assertThat(batch)
        .isEqualTo(
            KvEventBatch.of(
                1.5, List.of(goldenStored("GPU", List.of(List.of()), 0, "full_attention")), 0));
    BlockStored stored = (BlockStored) batch.events().get(0);
    assertThat(Long.toUnsignedString(stored.blockHashes().get(0)))
        .isEqualTo("17705339885301241772");
  }

  @Test
  void decode_workedExampleMapEra() {
    KvEventBatch batch = KvEventDecoder.decode(hex("worked-example-map.hex"));

    assertThat(batch)
        .isEqualTo(
            KvEventBatch.of(
                1.5, List.of(goldenStored("GPU", List.of(List.of()), 0, "full_attention")), 0));
  }

  @Test
  void decode_negativeInt64Hashes() {
    long negative = -4741404188408309844L; // the two's complement of 13705339885301241772
    byte[] payload =
        pack()
            .array(2)
            .f64(1.0)
            .array(2)
            .array(6)
            .str("BlockStored")
            .array(2)
            .integer(negative)
            .integer(-1)
            .integer(-5)
            .array(0)
            .integer(16)
            .nil()
            .array(2)
            .str("BlockRemoved")
            .array(1)
            .integer(Long.MIN_VALUE)
            .bytes();

    KvEventBatch batch = KvEventDecoder.decode(payload);

    BlockStored stored = (BlockStored) batch.events().get(0);
    assertThat(stored.blockHashes()).containsExactly(negative, -1L);
    assertThat(Long.toUnsignedString(stored.blockHashes().get(1)))
        .isEqualTo("18446744073709551615");
    assertThat(stored.parentBlockHash()).isEqualTo(-5L);
    assertThat(((BlockRemoved) batch.events().get(1)).blockHashes())
        .containsExactly(Long.MIN_VALUE);
  }

  @Test
  void decode_everyIntegerFormOfAHash() {
    byte[] payload =
        pack()
            .array(3)
            .f64(1.0)
            .array(1)
            .array(3)
            .str("BlockRemoved")
            .array(7)
            .raw("05") // positive fixint
            .raw("cc ff") // uint8
            .raw("cd 0100") // uint16
            .raw("ce 00010000") // uint32
            .raw("cf 0000000000000007") // uint64, small
            .raw("cf 8000000000000000") // uint64 = 2^63
            .raw("d0 80") // int8 -128
            .nil()
            .nil()
            .bytes();

    BlockRemoved removed = (BlockRemoved) KvEventDecoder.decode(payload).events().get(0);

    assertThat(removed.blockHashes())
        .containsExactly(5L, 255L, 256L, 65536L, 7L, Long.MIN_VALUE, -128L);
  }

  @ParameterizedTest
  @ValueSource(ints = {16, 32, 64, 96})
  void decode_binHashesTakeTheLastEightBytes(int length) {
    byte[] digest = new byte[length];
    Arrays.fill(digest, (byte) 0x5a);
    System.arraycopy(GOLDEN_0_BYTES, 0, digest, length - 8, 8);
    byte[] payload =
        pack()
            .array(3)
            .f64(1.0)
            .array(1)
            .array(7)
            .str("BlockStored")
            .array(1)
            .bin(digest)
            .bin(digest)
            .array(0)
            .integer(16)
            .nil()
            .str("GPU")
            .nil()
            .bytes();

    BlockStored stored = (BlockStored) KvEventDecoder.decode(payload).events().get(0);

    assertThat(stored.blockHashes()).containsExactly(GOLDEN_0);
    assertThat(stored.parentBlockHash()).isEqualTo(GOLDEN_0);
  }

  @ParameterizedTest
  @ValueSource(ints = {0, 7, 8, 20, 33})
  void decode_binHashOfAnotherLength_fails(int length) {
    byte[] payload =
        pack()
            .array(3)
            .f64(1.0)
            .array(1)
            .array(2)
            .str("BlockRemoved")
            .array(1)
            .bin(new byte[length])
            .nil()
            .bytes();

    assertThatThrownBy(() -> KvEventDecoder.decode(payload))
        .isInstanceOf(MalformedEventException.class)
        .hasMessageContaining("events[0].block_hashes[0] at byte 26")
        .hasMessageContaining("16 or 32*k bytes");
  }

  @Test
  void decode_unknownTags_skippedAndRecorded() {
    byte[] payload =
        pack()
            .array(3)
            .f64(2.0)
            .array(4)
            .array(4) // a future array event with fields of any shape
            .str("BlockInactive")
            .array(2)
            .integer(1)
            .integer(2)
            .map(1)
            .str("x")
            .array(1)
            .bin(new byte[3])
            .raw("d6 01 00000000") // an ext value
            .array(1)
            .str("AllBlocksCleared")
            .map(3) // a future map event whose fields clash with known names
            .str("type")
            .str("BlockOrigin")
            .str("block_hashes")
            .str("not hashes")
            .str("token_ids")
            .nil()
            .map(2) // tag not first
            .str("medium")
            .integer(3)
            .str("type")
            .str("Mystery")
            .nil()
            .bytes();

    KvEventBatch batch = KvEventDecoder.decode(payload);

    assertThat(batch.events()).containsExactly(AllBlocksCleared.INSTANCE);
    assertThat(batch.skippedTags()).containsExactly("BlockInactive", "BlockOrigin", "Mystery");
  }

  @Test
  void decode_unknownMapKeys_ignored() {
    byte[] payload =
        pack()
            .array(3)
            .f64(2.0)
            .array(2)
            .map(10)
            .str("type")
            .str("BlockStored")
            .str("origin")
            .str("REUSED")
            .str("block_hashes")
            .array(1)
            .integer(42)
            .str("event_version")
            .integer(2)
            .str("parent_block_hash")
            .integer(41)
            .str("future")
            .map(1)
            .str("nested")
            .array(2)
            .nil()
            .f64(0.5)
            .str("token_ids")
            .array(2)
            .integer(1)
            .integer(2)
            .str("block_size")
            .integer(2)
            .integer(99) // a key that is not even a string
            .str("ignored")
            .str("medium")
            .str("CPU")
            .map(4)
            .str("type")
            .str("BlockRemoved")
            .str("block_hashes")
            .array(1)
            .integer(42)
            .str("remaining_copy_counts") // an open vLLM proposal, unknown here
            .array(1)
            .integer(1)
            .str("medium")
            .nil()
            .integer(1)
            .bytes();

    KvEventBatch batch = KvEventDecoder.decode(payload);

    assertThat(batch.events())
        .containsExactly(
            new BlockStored(
                List.of(42L), 41L, List.of(1, 2), 2, null, "CPU", null, null, null, null, null),
            new BlockRemoved(List.of(42L), null, null));
    assertThat(batch.dataParallelRank()).isEqualTo(1);
    assertThat(batch.skippedTags()).isEmpty();
  }

  @Test
  void decode_typeKeyAnywhereInTheMap() {
    byte[] payload =
        pack()
            .array(3)
            .f64(2.0)
            .array(2)
            .map(5)
            .str("token_ids")
            .array(0)
            .str("block_size")
            .integer(0)
            .str("block_hashes")
            .array(1)
            .integer(7)
            .str("type")
            .str("BlockStored")
            .str("medium")
            .str("cpu")
            .map(2)
            .str("block_hashes")
            .array(1)
            .integer(7)
            .raw("d9 04 74797065") // "type" in a str8, as another encoder might write it
            .str("BlockRemoved")
            .integer(0)
            .bytes();

    KvEventBatch batch = KvEventDecoder.decode(payload);

    assertThat(batch.events())
        .containsExactly(
            new BlockStored(
                List.of(7L), null, List.of(), 0, null, "cpu", null, null, null, null, null),
            new BlockRemoved(List.of(7L), null, null));
  }

  @Test
  void decode_mapOuterBatch() {
    byte[] payload =
        pack()
            .map(4)
            .str("data_parallel_rank")
            .integer(3)
            .str("events")
            .array(1)
            .array(1)
            .str("AllBlocksCleared")
            .str("publisher")
            .str("ignored")
            .str("ts")
            .f64(1700000000.25)
            .bytes();

    KvEventBatch batch = KvEventDecoder.decode(payload);

    assertThat(batch)
        .isEqualTo(KvEventBatch.of(1700000000.25, List.of(AllBlocksCleared.INSTANCE), 3));
  }

  @Test
  void decode_mapOuterBatchWithoutEvents_fails() {
    byte[] payload = pack().map(1).str("ts").f64(1.0).bytes();

    assertThatThrownBy(() -> KvEventDecoder.decode(payload))
        .isInstanceOf(MalformedEventException.class)
        .hasMessage("batch at byte 0: the batch map lacks the required key \"events\"");
  }

  @Test
  void decode_mixedArrayAndMapEvents() {
    byte[] payload =
        pack()
            .array(3)
            .f64(1.5)
            .array(3)
            .array(4)
            .str("BlockRemoved")
            .array(1)
            .integer(9)
            .str("GPU")
            .integer(1)
            .map(1)
            .str("type")
            .str("AllBlocksCleared")
            .array(3)
            .str("BlockRemoved")
            .array(1)
            .integer(10)
            .str("cpu")
            .nil()
            .bytes();

    KvEventBatch batch = KvEventDecoder.decode(payload);

    assertThat(batch.events())
        .containsExactly(
            new BlockRemoved(List.of(9L), "GPU", 1),
            AllBlocksCleared.INSTANCE,
            new BlockRemoved(List.of(10L), "cpu", null));
    assertThat(batch.dataParallelRank()).isNull();
  }

  @Test
  void decode_lowerCaseCpuMedium_keptRawAndNormalisedByTier() {
    byte[] payload =
        pack()
            .array(3)
            .f64(1.0)
            .array(1)
            .array(3)
            .str("BlockRemoved")
            .array(1)
            .integer(1)
            .str("cpu")
            .integer(0)
            .bytes();

    BlockRemoved removed = (BlockRemoved) KvEventDecoder.decode(payload).events().get(0);

    assertThat(removed.medium()).isEqualTo("cpu");
    assertThat(removed.tier()).isEqualTo("CPU");
  }

  @Test
  void decode_timestampAsFloat32OrInteger() {
    assertThat(KvEventDecoder.decode(pack().array(2).f32(2.5f).array(0).bytes()).timestamp())
        .isEqualTo(2.5);
    assertThat(
            KvEventDecoder.decode(pack().array(2).integer(1700000000).array(0).bytes()).timestamp())
        .isEqualTo(1.7e9);
    assertThat(
            KvEventDecoder.decode(pack().array(2).raw("cf ffffffffffffffff").array(0).bytes())
                .timestamp())
        .isEqualTo(1.8446744073709552e19);
  }

  @Test
  void decode_extraTrailingElements_ignored() {
    byte[] payload =
        pack()
            .array(5)
            .f64(1.0)
            .array(3)
            .array(17)
            .str("BlockStored")
            .array(1)
            .integer(1)
            .nil()
            .array(1)
            .integer(5)
            .integer(1)
            .integer(2)
            .str("CPU")
            .str("adapter")
            .array(1)
            .nil()
            .integer(1)
            .str("sliding_window")
            .integer(4096)
            .str("REMOTE")
            .str("shared-fs")
            .str("chat-1")
            .str("future")
            .map(1)
            .str("k")
            .array(0)
            .array(5)
            .str("BlockRemoved")
            .array(0)
            .nil()
            .nil()
            .integer(5)
            .array(2)
            .str("AllBlocksCleared")
            .nil()
            .integer(7)
            .str("trailing")
            .array(1)
            .nil()
            .bytes();

    KvEventBatch batch = KvEventDecoder.decode(payload);

    assertThat(batch)
        .isEqualTo(
            KvEventBatch.of(
                1.0,
                List.of(
                    new BlockStored(
                        List.of(1L),
                        null,
                        List.of(5),
                        1,
                        2,
                        "CPU",
                        "adapter",
                        List.of(List.of()),
                        1,
                        "sliding_window",
                        4096,
                        "REMOTE",
                        "shared-fs",
                        "chat-1"),
                    new BlockRemoved(List.of(), null, null),
                    AllBlocksCleared.INSTANCE),
                7));
  }

  @Test
  void decode_extraKeysOfEveryForm() {
    byte[] digest = new byte[32];
    digest[0] = 1;
    digest[31] = 2;
    byte[] payload =
        pack()
            .array(3)
            .f64(1.0)
            .array(1)
            .array(9)
            .str("BlockStored")
            .array(2)
            .integer(1)
            .integer(2)
            .nil()
            .array(0)
            .integer(16)
            .nil()
            .nil()
            .str("Alice")
            .array(2)
            .array(4)
            .str("Alice")
            .array(2)
            .str("mm-hash")
            .integer(-3)
            .bin(digest)
            .str("salt")
            .nil()
            .integer(0)
            .bytes();

    BlockStored stored = (BlockStored) KvEventDecoder.decode(payload).events().get(0);

    assertThat(stored.extraKeys())
        .containsExactly(
            List.of(
                new ExtraKey.Text("Alice"),
                new ExtraKey.Multimodal("mm-hash", -3),
                new ExtraKey.Digest(digest),
                new ExtraKey.Text("salt")),
            List.of());
    assertThat(stored.loraName()).isEqualTo("Alice");
  }

  @Test
  void decode_sliceOfALargerBuffer_offsetsCountFromTheSlice() {
    byte[] payload = hex("v0_22.hex");
    byte[] buffer = new byte[payload.length + 10];
    System.arraycopy(payload, 0, buffer, 7, payload.length);

    assertThat(KvEventDecoder.decode(buffer, 7, payload.length))
        .isEqualTo(WireFixtures.fullBatch());
    assertThatThrownBy(() -> KvEventDecoder.decode(buffer, 7, 30))
        .isInstanceOf(MalformedEventException.class)
        .hasMessageStartingWith("events[0].block_hashes[0] at byte 25: truncated");
  }

  @Test
  void decode_truncatedPayload_namesTheFieldAndOffset() {
    byte[] payload = Arrays.copyOf(hex("v0_22.hex"), 30);

    assertThatThrownBy(() -> KvEventDecoder.decode(payload))
        .isInstanceOfSatisfying(
            MalformedEventException.class,
            e -> {
              assertThat(e.field()).isEqualTo("events[0].block_hashes[0]");
              assertThat(e.offset()).isEqualTo(25);
              assertThat(e.getMessage()).contains("truncated");
            });
  }

  @Test
  void decode_wrongType_namesTheFieldOffsetAndExpectation() {
    byte[] payload =
        pack()
            .array(3)
            .f64(1.0)
            .array(2)
            .array(1)
            .str("AllBlocksCleared")
            .array(3)
            .str("BlockRemoved")
            .array(3)
            .integer(1)
            .integer(2)
            .str("three")
            .nil()
            .nil()
            .bytes();

    assertThatThrownBy(() -> KvEventDecoder.decode(payload))
        .isInstanceOf(MalformedEventException.class)
        .hasMessage(
            "events[1].block_hashes[2] at byte 46: expected a block hash (an integer or a bin of 16"
                + " or 32*k bytes), got a string");
  }

  @Test
  void decode_trailingBytes_fail() {
    byte[] valid = hex("v0_9_1.hex");
    byte[] payload = Arrays.copyOf(valid, valid.length + 2);

    assertThatThrownBy(() -> KvEventDecoder.decode(payload))
        .isInstanceOf(MalformedEventException.class)
        .hasMessage(
            "batch at byte "
                + valid.length
                + ": expected the end of the payload, found 2 more bytes");
  }

  @Test
  void decode_hugeCountInATinyPayload_failsAtOnce() {
    byte[] signedOverflow = pack().raw("dd 80000000 c0c0c0c0c0c0c0").bytes();
    byte[] claimsMax = pack().raw("dd 7fffffff c0c0c0c0c0c0c0").bytes();
    byte[] hugeTokens =
        pack()
            .array(2)
            .f64(1.0)
            .array(1)
            .array(6)
            .str("BlockStored")
            .array(0)
            .nil()
            .raw("dd 7fffffff")
            .bytes();

    assertThat(signedOverflow).hasSize(12);
    assertThatThrownBy(() -> KvEventDecoder.decode(signedOverflow))
        .isInstanceOf(MalformedEventException.class)
        .hasMessageStartingWith("batch at byte 0: declares a size of 2^31 or more");
    assertThatThrownBy(() -> KvEventDecoder.decode(claimsMax))
        .isInstanceOf(MalformedEventException.class)
        .hasMessage(
            "batch at byte 0: the batch array [ts, events, data_parallel_rank] claims 2147483647"
                + " elements but only 7 bytes remain");
    assertThatThrownBy(() -> KvEventDecoder.decode(hugeTokens))
        .isInstanceOf(MalformedEventException.class)
        .hasMessageStartingWith("events[0].token_ids at byte 26: an array of token ids claims");
  }

  @Test
  void decode_hugeStringLength_failsAtOnce() {
    byte[] payload = pack().array(2).f64(1.0).array(1).array(1).raw("db 7fffffff 41").bytes();

    assertThatThrownBy(() -> KvEventDecoder.decode(payload))
        .isInstanceOf(MalformedEventException.class)
        .hasMessage(
            "events[0].type at byte 12: truncated: the value claims 2147483647 bytes but only 1"
                + " remain");
  }

  @Test
  void decode_shortStoredArray_fails() {
    byte[] payload =
        pack()
            .array(2)
            .f64(1.0)
            .array(1)
            .array(5)
            .str("BlockStored")
            .array(0)
            .nil()
            .array(0)
            .integer(1)
            .bytes();

    assertThatThrownBy(() -> KvEventDecoder.decode(payload))
        .isInstanceOf(MalformedEventException.class)
        .hasMessage(
            "events[0] at byte 11: a BlockStored array has 5 elements, expected at least 6");
  }

  @Test
  void decode_mapEventWithoutRequiredKey_fails() {
    byte[] payload =
        pack()
            .array(2)
            .f64(1.0)
            .array(1)
            .map(2)
            .str("type")
            .str("BlockStored")
            .str("block_hashes")
            .array(0)
            .bytes();

    assertThatThrownBy(() -> KvEventDecoder.decode(payload))
        .isInstanceOf(MalformedEventException.class)
        .hasMessage("events[0] at byte 11: a BlockStored map lacks the required key \"token_ids\"");
  }

  @Test
  void decode_mapEventWithoutType_fails() {
    byte[] payload = pack().array(2).f64(1.0).array(1).map(1).str("block_hashes").array(0).bytes();

    assertThatThrownBy(() -> KvEventDecoder.decode(payload))
        .isInstanceOf(MalformedEventException.class)
        .hasMessage("events[0] at byte 11: an event map has no \"type\" key");
  }

  @Test
  void decode_negativeBlockSize_fails() {
    byte[] payload =
        pack()
            .array(2)
            .f64(1.0)
            .array(1)
            .array(6)
            .str("BlockStored")
            .array(0)
            .nil()
            .array(0)
            .integer(-16)
            .nil()
            .bytes();

    assertThatThrownBy(() -> KvEventDecoder.decode(payload))
        .isInstanceOf(MalformedEventException.class)
        .hasMessage("events[0].block_size at byte 27: expected a non-negative block size, got -16");
  }

  @Test
  void decode_tokenIdBeyond32Bits_fails() {
    byte[] payload =
        pack()
            .array(2)
            .f64(1.0)
            .array(1)
            .array(6)
            .str("BlockStored")
            .array(0)
            .nil()
            .array(2)
            .integer(1)
            .integer(1L << 40)
            .integer(16)
            .nil()
            .bytes();

    assertThatThrownBy(() -> KvEventDecoder.decode(payload))
        .isInstanceOf(MalformedEventException.class)
        .hasMessage(
            "events[0].token_ids[1] at byte 28: expected a token id within the 32-bit range, got"
                + " 1099511627776");
  }

  @Test
  void decode_emptyOrNonBatchPayload_fails() {
    assertThatThrownBy(() -> KvEventDecoder.decode(new byte[0]))
        .isInstanceOf(MalformedEventException.class)
        .hasMessageStartingWith("batch at byte 0: truncated");
    assertThatThrownBy(() -> KvEventDecoder.decode(pack().str("hello").bytes()))
        .isInstanceOf(MalformedEventException.class)
        .hasMessage(
            "batch at byte 0: expected a KVEventBatch (an array [ts, events, rank] or a map), got a"
                + " string");
    assertThatThrownBy(() -> KvEventDecoder.decode(pack().raw("92 c1 c0").bytes()))
        .isInstanceOf(MalformedEventException.class)
        .hasMessage("ts at byte 1: found byte 0xc1, which msgpack never uses");
  }

  @Test
  void decode_eventOfWrongShape_fails() {
    byte[] payload =
        pack().array(2).f64(1.0).array(2).array(1).str("AllBlocksCleared").integer(4).bytes();

    assertThatThrownBy(() -> KvEventDecoder.decode(payload))
        .isInstanceOf(MalformedEventException.class)
        .hasMessage(
            "events[1] at byte 29: expected an event (a tagged array or map), got an integer");
  }

  @Test
  void decode_degenerateConnectorStore() {
    byte[] payload =
        pack()
            .array(3)
            .f64(1.0)
            .array(1)
            .array(7)
            .str("BlockStored")
            .array(1)
            .integer(3)
            .nil()
            .array(0)
            .integer(0)
            .nil()
            .str("STORAGE")
            .nil()
            .bytes();

    BlockStored stored = (BlockStored) KvEventDecoder.decode(payload).events().get(0);

    assertThat(stored)
        .isEqualTo(
            new BlockStored(
                List.of(3L), null, List.of(), 0, null, "STORAGE", null, null, null, null, null));
  }

  @Test
  void decode_goldenTokensSurvive() {
    BlockStored stored = (BlockStored) KvEventDecoder.decode(hex("v0_9_0.hex")).events().get(0);

    assertThat(stored.tokenIds()).isEqualTo(GOLDEN_0_TOKENS);
  }

  @Test
  void decodeWithoutTokenIds_sameBatchButTheStoresTokens() {
    RandomBatches random = new RandomBatches(7);
    for (int i = 0; i < 200; i++) {
      KvEventBatch batch = random.batch();
      WireEra era = WireEra.values()[i % WireEra.values().length];
      byte[] payload = KvEventEncoder.of(era, HashEncoding.UINT64).encode(batch);

      KvEventBatch full = KvEventDecoder.decode(payload);
      KvEventBatch lean = KvEventDecoder.decodeWithoutTokenIds(payload);

      List<KvEvent> expected =
          full.events().stream()
              .map(e -> e instanceof BlockStored s ? (KvEvent) s.withoutTokenIds() : e)
              .toList();
      assertThat(lean.events()).isEqualTo(expected);
      assertThat(lean.timestamp()).isEqualTo(full.timestamp());
      assertThat(lean.dataParallelRank()).isEqualTo(full.dataParallelRank());
    }
  }

  @Test
  void decodeWithoutTokenIds_aTokenThatIsNoInteger_stillFails() {
    byte[] payload =
        Pack.pack()
            .array(2)
            .f64(1.0)
            .array(1)
            .array(6)
            .str("BlockStored")
            .array(1)
            .integer(3)
            .nil()
            .array(1)
            .str("not a token")
            .integer(16)
            .nil()
            .bytes();

    assertThatThrownBy(() -> KvEventDecoder.decodeWithoutTokenIds(payload))
        .isInstanceOf(MalformedEventException.class)
        .hasMessageContaining("token");
  }
}
