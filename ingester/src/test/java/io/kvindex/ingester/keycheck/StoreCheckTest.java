package io.kvindex.ingester.keycheck;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.event.BlockStored;
import io.kvindex.event.ExtraKey;
import io.kvindex.hash.BlockHashInputs;
import io.kvindex.hash.BlockHasher;
import io.kvindex.hash.HashAlgorithm;
import io.kvindex.index.KeyMode;
import io.kvindex.index.KeySpec;
import io.kvindex.ingester.keycheck.StoreCheck.Finding;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** One store recomputed: the forms tried, what is judged and what is left alone. */
class StoreCheckTest {
  private static final int[] TOKENS = IntStream.range(0, 64).map(i -> 1000 + i * 13).toArray();

  private static BlockStored store(
      long[] hashes, int blockSize, int tokens, List<List<ExtraKey>> extraKeys, String kind) {
    List<Integer> ids = Arrays.stream(TOKENS).limit(tokens).boxed().toList();
    return new BlockStored(
        Arrays.stream(hashes).boxed().toList(),
        null,
        ids,
        blockSize,
        null,
        "GPU",
        null,
        extraKeys,
        kind == null ? null : 0,
        kind,
        null);
  }

  private static long[] hashes(HashAlgorithm algorithm, String seed, int blockSize) {
    return BlockHasher.create(algorithm, seed, blockSize).blockHashes(TOKENS);
  }

  @Test
  void check_configuredKeysReproduce_matches() {
    BlockStored s = store(hashes(HashAlgorithm.SHA256, null, 16), 16, 64, null, null);
    Finding f =
        StoreCheck.check(s, KeySpec.parse("engine:sha256:16"), KeyMode.ENGINE).orElseThrow();
    assertThat(f.matches()).isTrue();
    assertThat(f.engines()).isEqualTo(KeySpec.parse("engine:sha256:16"));
  }

  @Test
  void check_loraExtraKeys_areHashedAsTheEventCarriesThem() {
    long[] lora =
        BlockHasher.create(HashAlgorithm.SHA256_CBOR, "7", 16)
            .blockHashes(TOKENS, BlockHashInputs.builder().loraName("adapter").build());
    List<List<ExtraKey>> keys =
        Collections.nCopies(4, List.<ExtraKey>of(new ExtraKey.Text("adapter")));
    Finding f =
        StoreCheck.check(
                store(lora, 16, 64, keys, "full_attention"),
                KeySpec.parse("engine:sha256:7:16"),
                KeyMode.ENGINE)
            .orElseThrow();
    assertThat(f.matches()).isFalse();
    assertThat(f.engines()).isEqualTo(KeySpec.parse("engine:sha256_cbor:7:16"));
  }

  @Test
  void check_hybridGroupOfLargerBlocks_isJudgedAtTheConfiguredGranularity() {
    long[] fine = hashes(HashAlgorithm.SHA256, null, 16);
    long[] coarse = {fine[1], fine[3]}; // a 32-token group publishes every second fine hash
    Finding f =
        StoreCheck.check(
                store(coarse, 32, 64, null, "full_attention"),
                KeySpec.parse("engine:sha256:16"),
                KeyMode.ENGINE)
            .orElseThrow();
    assertThat(f.matches()).isTrue();
  }

  @Test
  void check_storesThatCannotBeRecomputed_areLeftAlone() {
    KeySpec keys = KeySpec.parse("engine:sha256:16");
    long[] hashes = hashes(HashAlgorithm.SHA256, null, 16);
    BlockStored withParent =
        new BlockStored(
            Arrays.stream(hashes).boxed().toList(),
            42L,
            Arrays.stream(TOKENS).boxed().toList(),
            16,
            null,
            null,
            null,
            null,
            null,
            null,
            null);
    assertThat(StoreCheck.check(withParent, keys, KeyMode.ENGINE))
        .as("a parent's full digest never leaves the engine")
        .isEmpty();
    assertThat(StoreCheck.check(store(hashes, 16, 48, null, null), keys, KeyMode.ENGINE))
        .as("fewer token ids than blocks (skipped blocks)")
        .isEmpty();
    assertThat(
            StoreCheck.check(store(hashes, 16, 64, null, "sliding_window"), keys, KeyMode.ENGINE))
        .isEmpty();
    assertThat(StoreCheck.check(store(hashes, 16, 64, null, null), keys, KeyMode.TOKEN))
        .as("a router keying another mode than the ingester is inspect's to report")
        .isEmpty();
  }

  @Test
  void check_unseededXxhash_noFormReproducesIt() {
    long[] random = hashes(HashAlgorithm.XXHASH, "a seed drawn at random", 16);
    Finding f =
        StoreCheck.check(
                store(random, 16, 64, null, null),
                KeySpec.parse("engine:sha256:16"),
                KeyMode.ENGINE)
            .orElseThrow();
    assertThat(f.matches()).isFalse();
    assertThat(f.engines()).isNull();
  }

  @Test
  void candidates_configuredFormFirst_everyReproducibleForm() {
    List<KeySpec> c = StoreCheck.candidates(KeySpec.parse("engine:xxhash:5:8"), 16);
    assertThat(c.get(0)).isEqualTo(KeySpec.parse("engine:xxhash:5:8"));
    List<String> specs = new ArrayList<>(c.stream().map(KeySpec::spec).toList());
    assertThat(specs)
        .contains("engine:sha256:16", "engine:sha256_cbor:5:16", "engine:sha256_cbor_64bit:5:8")
        .doesNotContain("engine:xxhash:16", "engine:xxhash_cbor:16");
  }
}
