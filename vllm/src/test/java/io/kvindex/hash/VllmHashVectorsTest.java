package io.kvindex.hash;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every algorithm against vectors computed outside this code: {@code
 * src/test/python/vllm_block_hashes.py} hashes each case as vLLM's kv_cache_utils does, with
 * Python's own pickle (protocol 5), cbor2 ({@code canonical=True}), hashlib and python-xxhash, and
 * wrote {@code hash/vllm-block-hashes.json}: default, empty, unicode and numeric seeds, token ids
 * at every integer width, block sizes 1 to 20 000 (a pickle split into frames), LoRA names, cache
 * salts, multimodal items and prompt-embeds digests.
 */
class VllmHashVectorsTest {
  private static final String RESOURCE = "/hash/vllm-block-hashes.json";

  static Stream<JsonNode> cases() {
    try (InputStream in = VllmHashVectorsTest.class.getResourceAsStream(RESOURCE)) {
      JsonNode root = new ObjectMapper().readTree(in);
      return StreamSupport.stream(root.get("cases").spliterator(), false);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void blockHashes_vllmVector_matchExactly(JsonNode vector) {
    HashAlgorithm algorithm = HashAlgorithm.fromVllmName(vector.get("algo").asText());
    String seed = vector.get("seed").asText();
    BlockHasher hasher = BlockHasher.create(algorithm, seed, vector.get("block_size").asInt());

    long[] hashes = hasher.blockHashes(tokens(vector.get("tokens")), inputs(vector));

    assertThat(HexFormat.of().formatHex(hasher.noneHash()))
        .isEqualTo(vector.get("none_hash").asText());
    assertThat(Arrays.stream(hashes).mapToObj(Long::toUnsignedString))
        .containsExactlyElementsOf(strings(vector.get("hashes")));
    if (HashAlgorithm.DEFAULT_SEED.equals(seed)) {
      BlockHasher unset = BlockHasher.create(algorithm, null, hasher.blockSize());
      assertThat(unset.blockHashes(tokens(vector.get("tokens")), inputs(vector)))
          .as("no seed given means vLLM's default seed")
          .containsExactly(hashes);
    }
  }

  private static int[] tokens(JsonNode tokens) {
    if (tokens.isObject()) { // the generator's rule for long runs: i * times % mod
      int count = tokens.get("count").asInt();
      long times = tokens.get("times").asLong();
      long mod = tokens.get("mod").asLong();
      int[] out = new int[count];
      for (int i = 0; i < count; i++) {
        out[i] = (int) (i * times % mod);
      }
      return out;
    }
    int[] out = new int[tokens.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = tokens.get(i).asInt();
    }
    return out;
  }

  private static BlockHashInputs inputs(JsonNode vector) {
    BlockHashInputs.Builder inputs = BlockHashInputs.builder();
    if (vector.has("lora")) {
      inputs.loraName(vector.get("lora").asText());
    }
    if (vector.has("salt")) {
      inputs.cacheSalt(vector.get("salt").asText());
    }
    if (vector.has("mm")) {
      for (JsonNode item : vector.get("mm")) {
        inputs.multimodal(item.get(0).asText(), item.get(1).asLong(), item.get(2).asLong());
      }
    }
    if (vector.has("embeds")) {
      List<byte[]> digests = new ArrayList<>();
      for (JsonNode digest : vector.get("embeds")) {
        digests.add(HexFormat.of().parseHex(digest.asText()));
      }
      inputs.promptEmbedsDigests(digests);
    }
    return inputs.build();
  }

  private static List<String> strings(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(node -> out.add(node.asText()));
    return out;
  }
}
