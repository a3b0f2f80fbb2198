package io.kvindex.ingester.stream;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.CacheLayout;
import io.kvindex.index.CacheLayout.Group;
import java.util.List;
import org.junit.jupiter.api.Test;

class EngineCapacityTest {
  private static final CacheLayout DENSE =
      new CacheLayout(List.of(new Group(0, "full_attention", 16, 0)));
  private static final CacheLayout SWA =
      new CacheLayout(
          List.of(new Group(0, "full_attention", 16, 0), new Group(1, "sliding_window", 16, 128)));
  private static final CacheLayout MAMBA =
      new CacheLayout(
          List.of(new Group(0, "full_attention", 32, 0), new Group(1, "mamba", 128, 0)));

  @Test
  void dense_numGpuBlocks() {
    assertThat(new EngineCapacity(2168, 16, 0).fullAttentionBlocks(DENSE)).isEqualTo(2168);
    assertThat(new EngineCapacity(2168, 16, 0).fullAttentionBlocks(CacheLayout.empty()))
        .isEqualTo(2168);
    assertThat(new EngineCapacity(2168, 16, 2168 * 16).fullAttentionBlocks(DENSE)).isEqualTo(2168);
  }

  @Test
  void hybrid_kvCacheSizeTokensInFullAttentionBlocks() {
    assertThat(new EngineCapacity(2168, 16, 27967).fullAttentionBlocks(SWA)).isEqualTo(1747);
    // the group's own block size, not vLLM's block_size label (the smallest group's)
    assertThat(new EngineCapacity(1000, 16, 64_000).fullAttentionBlocks(MAMBA)).isEqualTo(2000);
  }

  @Test
  void hybridWithoutKvCacheSizeTokens_poolSharedByTheGroups() {
    assertThat(new EngineCapacity(2168, 16, 0).fullAttentionBlocks(SWA)).isEqualTo(1084);
  }

  @Test
  void unknown_zero() {
    assertThat(EngineCapacity.UNKNOWN.fullAttentionBlocks(SWA)).isZero();
  }
}
