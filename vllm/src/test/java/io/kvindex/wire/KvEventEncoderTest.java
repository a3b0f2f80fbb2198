package io.kvindex.wire;

import static io.kvindex.wire.WireFixtures.GOLDEN_0;
import static io.kvindex.wire.WireFixtures.goldenStored;
import static io.kvindex.wire.WireFixtures.hex;
import static io.kvindex.wire.WireFixtures.parseHex;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.ExtraKey;
import io.kvindex.event.KvEventBatch;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class KvEventEncoderTest {

  @ParameterizedTest
  @EnumSource(WireEra.class)
  void encode_eraFixture_byteExact(WireEra era) {
    byte[] expected = hex(WireFixtures.fixtureName(era));

    assertThat(hexOf(KvEventEncoder.of(era).encode(WireFixtures.fullBatch())))
        .isEqualTo(hexOf(expected));
    assertThat(hexOf(KvEventEncoder.of(era).encode(WireFixtures.eraBatch(era))))
        .isEqualTo(hexOf(expected));
  }

  @Test
  void encode_workedExamples_byteExact() {
    KvEventBatch batch =
        KvEventBatch.of(
            1.5, List.of(goldenStored("GPU", List.of(List.of()), 0, "full_attention")), 0);

    byte[] array = KvEventEncoder.of(WireEra.V0_22).encode(batch);
    byte[] map = KvEventEncoder.of(WireEra.MAP).encode(batch);

    assertThat(array).hasSize(115);
    assertThat(hexOf(array)).isEqualTo(hexOf(hex("worked-example-array.hex")));
    assertThat(hexOf(map)).isEqualTo(hexOf(hex("worked-example-map.hex")));
  }

  @Test
  void encode_hashEncodings() {
    KvEventBatch batch =
        KvEventBatch.of(
            0.0, List.of(new BlockRemoved(List.of(5L, 200L, GOLDEN_0, -2L), null, null)), null);
    String head = "92 cb0000000000000000 91 92 ac426c6f636b52656d6f766564 94";
    String pad = "000000000000000000000000000000000000000000000000";

    assertThat(hexOf(KvEventEncoder.of(WireEra.V0_9_0, HashEncoding.UINT64).encode(batch)))
        .isEqualTo(squash(head + "05 ccc8 cff5b600d19aef97ac cffffffffffffffffe"));
    assertThat(hexOf(KvEventEncoder.of(WireEra.V0_9_0, HashEncoding.SIGNED).encode(batch)))
        .isEqualTo(squash(head + "05 ccc8 d3f5b600d19aef97ac fe"));
    assertThat(hexOf(KvEventEncoder.of(WireEra.V0_9_0, HashEncoding.BIN).encode(batch)))
        .isEqualTo(
            squash(
                head
                    + "c420"
                    + pad
                    + "0000000000000005 c420"
                    + pad
                    + "00000000000000c8 c420"
                    + pad
                    + "f5b600d19aef97ac c420"
                    + pad
                    + "fffffffffffffffe"));
  }

  @Test
  void encode_extraKeysAndNegativeInts_byteExact() {
    byte[] digest = new byte[32];
    digest[31] = 7;
    BlockStored stored =
        new BlockStored(
            List.of(1L),
            2L,
            List.of(-1, -200, 70000),
            16,
            -3,
            null,
            "Alice",
            List.of(
                List.of(
                    new ExtraKey.Text("Alice"),
                    new ExtraKey.Multimodal("mm", -3),
                    new ExtraKey.Digest(digest))),
            null,
            null,
            null);

    byte[] bytes =
        KvEventEncoder.of(WireEra.V0_17).encode(KvEventBatch.of(1.0, List.of(stored), 2));

    assertThat(hexOf(bytes))
        .isEqualTo(
            squash(
                "93 cb3ff0000000000000 91 99 ab426c6f636b53746f726564"
                    + " 91 01 02 93 ff d1ff38 ce00011170 10 fd c0 a5416c696365"
                    + " 91 93 a5416c696365 92 a26d6d fd c420"
                    + "00".repeat(31)
                    + "07 02"));
  }

  @Test
  void encode_stringArrayAndBinSizeForms() {
    String medium32 = "m".repeat(32);
    String medium256 = "n".repeat(256);
    List<Integer> tokens = new ArrayList<>();
    for (int i = 0; i < 70000; i++) {
      tokens.add(1);
    }
    BlockStored big =
        new BlockStored(
            List.of(), null, tokens, 1, null, medium256, medium32, null, null, null, null);

    byte[] bytes = KvEventEncoder.of(WireEra.V0_14).encode(KvEventBatch.of(1.0, List.of(big), 0));

    String hex = hexOf(bytes);
    assertThat(hex).contains(squash("90 c0 dd00011170 0101"));
    assertThat(hex).contains(squash("da0100 6e6e"));
    assertThat(hex).contains(squash("d920 6d6d"));
    assertThat(KvEventDecoder.decode(bytes).events()).containsExactly(big);
  }

  @ParameterizedTest
  @EnumSource(WireEra.class)
  void encode_roundTripsThroughTheDecoder(WireEra era) {
    RandomBatches random = new RandomBatches(era.ordinal() * 7919L);
    for (HashEncoding hashes : HashEncoding.values()) {
      KvEventEncoder encoder = KvEventEncoder.of(era, hashes);
      for (int i = 0; i < 300; i++) {
        KvEventBatch batch = random.batch();

        KvEventBatch decoded = KvEventDecoder.decode(encoder.encode(batch));

        assertThat(decoded).as("%s %s #%d", era, hashes, i).isEqualTo(era.carried(batch));
      }
    }
  }

  @Test
  void encode_mapEraOmitsNilOptionalsButKeepsNilRequired() {
    BlockStored bare = BlockStored.of(List.of(9L), null, List.of(), 0);

    byte[] bytes = KvEventEncoder.of(WireEra.MAP).encode(KvEventBatch.of(1.0, List.of(bare), null));

    assertThat(hexOf(bytes))
        .isEqualTo(
            squash(
                "93 cb3ff0000000000000 91 88 a474797065 ab426c6f636b53746f726564"
                    + " ac626c6f636b5f686173686573 9109"
                    + " b1706172656e745f626c6f636b5f68617368 c0"
                    + " a9746f6b656e5f696473 90"
                    + " aa626c6f636b5f73697a65 00"
                    + " a76c6f72615f6964 c0"
                    + " a66d656469756d c0"
                    + " a96c6f72615f6e616d65 c0"
                    + " c0"));
  }

  private static String hexOf(byte[] bytes) {
    return HexFormat.of().formatHex(bytes);
  }

  private static String squash(String hex) {
    return hexOf(parseHex(hex));
  }
}
