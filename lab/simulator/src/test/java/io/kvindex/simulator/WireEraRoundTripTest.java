package io.kvindex.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.hash.BlockHasher;
import io.kvindex.hash.HashAlgorithm;
import io.kvindex.wire.HashEncoding;
import io.kvindex.wire.KvEventDecoder;
import io.kvindex.wire.WireEra;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class WireEraRoundTripTest {

  static Stream<Arguments> eras() {
    return Arrays.stream(WireEra.values())
        .flatMap(era -> Arrays.stream(HashEncoding.values()).map(h -> Arguments.of(era, h)));
  }

  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("eras")
  void published_decodesWithTheCommonDecoderToWhatWasPublished(WireEra era, HashEncoding hashes) {
    Recorder rec = new Recorder();
    boolean medium = era.compareTo(WireEra.V0_10_2) >= 0;
    try (DefaultSimulatedPod pod =
        TestPods.start(
            TestPods.config()
                .era(era)
                .hashEncoding(hashes)
                .capacityBlocks(6)
                .cpuCapacityBlocks(medium ? 4 : 0)
                .blockSize(4)
                .dataParallelSize(2)
                .build())) {
      pod.addListener(rec);
      int[] prompt = TestPods.tokens(1, 13);
      pod.submit(new InferenceRequest(prompt, TestPods.tokens(2, 5), "Alice", "salt"), 1);
      pod.submit(TestPods.request(3, 16, 3), 1);
      pod.resetPrefixCache();
      pod.submit(TestPods.request(4, 8, 1), 1);

      assertThat(rec.batches).hasSizeGreaterThan(3);
      List<Class<?>> kinds =
          rec.batches.stream().flatMap(b -> b.events().stream()).map(Object::getClass).toList();
      assertThat(kinds).contains(BlockStored.class, BlockRemoved.class, AllBlocksCleared.class);
      for (int i = 0; i < rec.batches.size(); i++) {
        assertThat(KvEventDecoder.decode(rec.payloads.get(i)))
            .isEqualTo(era.carried(rec.batches.get(i)));
      }
      assertThat(rec.batches.get(0).dataParallelRank()).isEqualTo(1);
    }
  }

  @Test
  void engineHashMode_matchesTheCommonBlockHasher() {
    Recorder rec = new Recorder();
    try (DefaultSimulatedPod pod =
        TestPods.start(TestPods.config().hashSeed("42").blockSize(16).build())) {
      pod.addListener(rec);
      int[] prompt = TestPods.tokens(9, 64);
      pod.submit(InferenceRequest.of(prompt, new int[] {1}));

      long[] expected = BlockHasher.create(HashAlgorithm.SHA256_CBOR, "42", 16).blockHashes(prompt);
      KvEvent stored = rec.lastEvents().get(0);
      assertThat(((BlockStored) stored).blockHashes())
          .containsExactlyElementsOf(Arrays.stream(expected).boxed().toList());
    }
  }

  @Test
  void randomHashMode_cannotBeRecomputedWithAKnownSeed() {
    Recorder rec = new Recorder();
    try (DefaultSimulatedPod pod =
        TestPods.start(TestPods.config().hashMode(HashMode.RANDOM).blockSize(16).build())) {
      pod.addListener(rec);
      int[] prompt = TestPods.tokens(9, 64);
      pod.submit(InferenceRequest.of(prompt, new int[] {1}));

      for (String seed : List.of("0", "42")) {
        long[] known = BlockHasher.create(HashAlgorithm.SHA256_CBOR, seed, 16).blockHashes(prompt);
        assertThat(((BlockStored) rec.lastEvents().get(0)).blockHashes())
            .doesNotContainAnyElementsOf(Arrays.stream(known).boxed().toList());
      }
    }
  }
}
