package io.kvindex.index;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.index.CacheLayout.Group;
import java.util.List;
import org.junit.jupiter.api.Test;

class CacheLayoutTest {
  private static final CacheLayout GPT_OSS =
      new CacheLayout(
          List.of(new Group(1, "sliding_window", 16, 128), new Group(0, "full_attention", 16, 0)));

  @Test
  void encode_decode_roundTripsInGroupOrder() {
    assertThat(GPT_OSS.encode()).isEqualTo("0:full_attention:16:0;1:sliding_window:16:128");
    assertThat(CacheLayout.decode(GPT_OSS.encode())).isEqualTo(GPT_OSS);
    assertThat(CacheLayout.decode("")).isEqualTo(CacheLayout.empty());
  }

  @Test
  void decode_malformed_saysWhatIsWrong() {
    assertThatThrownBy(() -> CacheLayout.decode("0:full_attention:16"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("index:kind:blockSize:window");
    assertThatThrownBy(() -> CacheLayout.decode("0:mamba:x:0"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("malformed number");
  }

  @Test
  void hybrid_oneFullGroupIsNot() {
    assertThat(new CacheLayout(List.of(new Group(0, null, 16, 0))).hybrid()).isFalse();
    assertThat(GPT_OSS.hybrid()).isTrue();
  }

  @Test
  void unscorable_namesTheGroupItCannotScore() {
    assertThat(GPT_OSS.unscorable(16)).isEmpty();
    assertThat(GPT_OSS.with(new Group(2, "cross_attention", 16, 0)).unscorable(16))
        .hasValueSatisfying(why -> assertThat(why).contains("group 2").contains("cross_attention"));
    assertThat(GPT_OSS.with(new Group(2, "chunked_local_attention", 16, 0)).unscorable(16))
        .hasValueSatisfying(why -> assertThat(why).contains("attention chunk size"));
    assertThat(GPT_OSS.unscorable(32)).hasValueSatisfying(why -> assertThat(why).contains("32"));
    assertThat(new CacheLayout(List.of(new Group(0, "mamba", 16, 0))).unscorable(16))
        .hasValueSatisfying(why -> assertThat(why).contains("no full-attention"));
  }

  @Test
  void with_aChangedGroup_replacesIt() {
    CacheLayout wider = GPT_OSS.with(new Group(1, "sliding_window", 16, 256));
    assertThat(wider.group(1).orElseThrow().window()).isEqualTo(256);
    assertThat(wider.groups()).hasSize(2);
  }
}
