package io.kvindex.ingester;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.CacheLayout;
import io.kvindex.index.CacheLayout.Group;
import io.kvindex.index.InMemoryPrefixIndex;
import io.kvindex.index.PrefixIndex;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import org.junit.jupiter.api.Test;

class CacheLayoutsTest {
  private final PrefixIndex index = InMemoryPrefixIndex.of(PrefixIndex.builder().indexName("t"));
  private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
  private final CacheLayouts layouts = new CacheLayouts(index, meters);

  private static BlockStored store(
      int group, String kind, int blockSize, Integer window, String medium) {
    return new BlockStored(
        List.of(1L), null, List.of(), blockSize, null, medium, null, null, group, kind, window);
  }

  private static KvEventBatch batch(KvEvent... events) {
    return KvEventBatch.of(0.0, List.of(events), null);
  }

  private CacheLayout recorded(String model) {
    return index.cacheLayoutAsync(model).join().orElseThrow();
  }

  @Test
  void observe_gptOssStores_recordsBothGroups() {
    layouts.observe(
        "m",
        batch(
            store(0, "full_attention", 16, null, null),
            store(1, "sliding_window", 16, 128, "GPU")));
    assertThat(recorded("m"))
        .isEqualTo(
            new CacheLayout(
                List.of(
                    new Group(0, "full_attention", 16, 0),
                    new Group(1, "sliding_window", 16, 128))));
    assertThat(recorded("m").hybrid()).isTrue();
    assertThat(meters.counter("kvindex.ingester.cache.layout.changes").count()).isEqualTo(1);
  }

  @Test
  void observe_sameLayoutAgain_recordsNothingMore() {
    KvEventBatch b = batch(store(0, "full_attention", 16, null, null));
    layouts.observe("m", b);
    layouts.observe("m", b);
    assertThat(meters.counter("kvindex.ingester.cache.layout.changes").count()).isEqualTo(1);
  }

  @Test
  void observe_redeployWithAnotherWindow_replacesTheGroup() {
    layouts.observe("m", batch(store(1, "sliding_window", 16, 128, null)));
    layouts.observe("m", batch(store(1, "sliding_window", 16, 512, null)));
    assertThat(recorded("m").group(1).orElseThrow().window()).isEqualTo(512);
  }

  @Test
  void observe_mambaPartialEntry_keepsTheGroupsBlockSize() {
    layouts.observe(
        "m", batch(store(1, "mamba", 64, null, null), store(1, "mamba", 16, null, null)));
    assertThat(recorded("m").group(1).orElseThrow().blockSize()).isEqualTo(64);
  }

  @Test
  void observe_offloadedAndPlaceholderStores_describeNoGroup() {
    layouts.observe(
        "m", batch(store(0, "full_attention", 16, null, "CPU"), store(0, null, 0, null, null)));
    assertThat(index.cacheLayoutAsync("m").join()).isEmpty();
  }

  @Test
  void observe_unknownKind_isRecordedAndUnscorable() {
    layouts.observe(
        "m",
        batch(
            store(0, "full_attention", 16, null, null),
            store(1, "some_future_kind", 16, null, null)));
    assertThat(recorded("m").unscorable(16))
        .hasValueSatisfying(w -> assertThat(w).contains("some_future_kind"));
  }

  @Test
  void observe_malformedKind_isCountedAndIngestGoesOn() {
    layouts.observe("m", batch(store(0, "bad kind;", 16, null, null)));
    assertThat(meters.counter("kvindex.ingester.cache.layout.unreadable").count()).isEqualTo(1);
    assertThat(index.cacheLayoutAsync("m").join()).isEmpty();
  }
}
