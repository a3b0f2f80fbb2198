package io.kvindex.router;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.hash.HashAlgorithm;
import io.kvindex.index.HybridHit;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class RouterConfigTest {

  @ParameterizedTest
  @ValueSource(
      strings = {
        "engine:sha256_cbor:42:16",
        "engine:xxhash_cbor:0:32",
        "token:16",
        "engine:sha256:16",
        "engine:sha256_cbor:16",
        "engine:sha256::16",
        "engine:xxhash:a:b:32",
        "engine:sha256:16:eagle",
        "engine:sha256_cbor:42:16:eagle-all",
        "token:16:eagle"
      })
  void modelKeysSpec_isTheFormParseReads(String spec) {
    assertThat(ModelKeys.parse(spec).spec()).isEqualTo(spec);
  }

  @Test
  void parse_noSeed_meansTheEnginesRunWithoutPythonHashSeed() {
    assertThat(ModelKeys.parse("engine:sha256:16"))
        .isEqualTo(ModelKeys.engine(HashAlgorithm.SHA256, null, 16));
    assertThat(ModelKeys.parse("engine:sha256::16").seed()).isEmpty();
    assertThat(ModelKeys.parse("engine:xxhash:a:b:32").seed()).isEqualTo("a:b");
  }

  @Test
  void parse_eagleSuffix_isTheDraftModelNotPartOfTheKeys() {
    ModelKeys eagle = ModelKeys.parse("engine:sha256:16:eagle");

    assertThat(eagle.eagle()).isEqualTo(HybridHit.Eagle.FULL_ATTENTION);
    assertThat(eagle.keySpec()).isEqualTo(ModelKeys.parse("engine:sha256:16").keySpec());
    assertThat(ModelKeys.parse("engine:sha256:eagle:16").seed()).isEqualTo("eagle");
    assertThat(ModelKeys.parse("engine:sha256:16").eagle()).isEqualTo(HybridHit.Eagle.OFF);
    assertThat(ModelKeys.parse("token:16:eagle-all").eagle()).isEqualTo(HybridHit.Eagle.ALL_GROUPS);
  }

  @ParameterizedTest
  @ValueSource(strings = {"engine:xxhash:16", "engine:xxhash_cbor:16"})
  void parse_xxhashWithoutSeed_refusedWithWhatToDo(String spec) {
    assertThatThrownBy(() -> ModelKeys.parse(spec))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("cannot be reproduced")
        .hasMessageContaining("token:<block size>");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "redis://Pa55w0rd@h:1",
        "redis://kv:Pa55w0rd@h:1",
        "redis://kv:Pa55/w0rd@x@h:1",
        "rediss://kv:Pa55%2Fw0rd%40x@h:1",
        "rediss-cluster://kv:Pa55w0rd@h1:1,h2:2",
        "redis-sentinel://kv:Pa55w0rd@h1:1,h2:2/0?sentinelPassword=Pa55w0rd#m"
      })
  void toString_neverShowsPassword(String uri) {
    KvRouterBuilder builder = KvRouter.builder().redisUri(uri);

    assertThat(builder.config().toString()).contains("redisUri=").doesNotContain("Pa55", "w0rd");
  }

  @ParameterizedTest
  @ValueSource(strings = {"redis://kv:Pa55w0rd@h1:1", "rediss://Pa55/w0rd@h1:1"})
  void toString_clusterSeeds_neverShowsPassword(String seed) {
    KvRouterBuilder builder = KvRouter.builder().clusterSeeds(List.of(seed, seed));

    assertThat(builder.config().toString()).doesNotContain("Pa55", "w0rd");
  }
}
