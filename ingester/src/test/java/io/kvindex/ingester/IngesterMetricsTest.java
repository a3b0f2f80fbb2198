package io.kvindex.ingester;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.event.KvEventBatch;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class IngesterMetricsTest {

  /** A publisher inventing tags cannot grow the metrics without bound. */
  @Test
  void unknownTags_boundedLabelSet() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    IngesterMetrics metrics = new IngesterMetrics(registry);
    List<String> tags = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      tags.add("Tag" + i + "x".repeat(10_000));
    }
    metrics.applied(new KvEventBatch(0, List.of(), null, tags), 0);
    metrics.applied(new KvEventBatch(0, List.of(), null, List.of(tags.get(3))), 0);

    var counters = registry.find("kvindex.ingester.events.unknown").counters();
    assertThat(counters).hasSize(IngesterMetrics.UNKNOWN_TAG_LABELS + 1);
    assertThat(counters)
        .allSatisfy(
            c ->
                assertThat(c.getId().getTag("tag").length())
                    .isLessThanOrEqualTo(IngesterMetrics.TAG_LABEL_CHARS));
    assertThat(metrics.value("kvindex.ingester.events.unknown", "tag", "other"))
        .isEqualTo(100 - IngesterMetrics.UNKNOWN_TAG_LABELS);
    String third = tags.get(3).substring(0, IngesterMetrics.TAG_LABEL_CHARS);
    assertThat(metrics.value("kvindex.ingester.events.unknown", "tag", third)).isEqualTo(2);
  }
}
