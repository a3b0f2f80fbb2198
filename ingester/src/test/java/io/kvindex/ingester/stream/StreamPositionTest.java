package io.kvindex.ingester.stream;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.PurgeStatus;
import org.junit.jupiter.api.Test;

/** Where a stream stands in the index, as the index's answers and the purges asked for move it. */
class StreamPositionTest {

  @Test
  void goOnFrom_aNewStreamMovesOnWithoutAPurge_oneWithAWatermarkIsPurgedFirst() {
    StreamPosition fresh = new StreamPosition();
    fresh.start(-1, false);
    fresh.goOnFrom(7, "gap_beyond_ring");
    assertThat(fresh.purge()).as("nothing of it is in the index to be wrong").isNull();
    assertThat(fresh.expected()).isEqualTo(7);

    StreamPosition held = new StreamPosition();
    held.start(4, false);
    held.goOnFrom(7, "gap_beyond_ring");
    assertThat(held.purge()).isEqualTo(Purge.goOnFrom("gap_beyond_ring", 7));
    assertThat(held.expected()).as("not before the purge is done").isEqualTo(5);
    assertThat(held.purged(PurgeStatus.PURGED)).isTrue();
    assertThat(held.expected()).isEqualTo(7);
    assertThat(held.applied()).as("the watermark is forgotten").isEqualTo(-1);
    assertThat(held.staging()).as("what comes next rebuilds the stream").isTrue();
  }

  @Test
  void purged_aTemporaryErrorKeepsThePurgeDue() {
    StreamPosition at = new StreamPosition();
    at.start(4, false);
    at.requestPurge("sleep");
    assertThat(at.purged(PurgeStatus.SWALLOWED)).isFalse();
    assertThat(at.purge()).isEqualTo(Purge.keepingWatermark("sleep"));
    assertThat(at.purged(PurgeStatus.PURGED)).isTrue();
    assertThat(at.purge()).isNull();
    assertThat(at.applied()).as("kept").isEqualTo(4);
    assertThat(at.staging()).isFalse();
  }

  @Test
  void requestPurge_keepsThePurgeDue_startOverReplacesIt_unlessDueKeepsAStartOver() {
    StreamPosition at = new StreamPosition();
    at.start(4, false);
    at.startOver("engine_restart");
    at.requestPurge("sleep");
    assertThat(at.purge().reason()).isEqualTo("engine_restart");
    assertThat(at.startOverUnlessDue("drift")).isFalse();
    assertThat(at.purge().reason()).isEqualTo("engine_restart");

    at.purged(PurgeStatus.PURGED);
    at.requestPurge("sleep");
    assertThat(at.startOverUnlessDue("drift"))
        .as("a purge keeping the watermark is replaced")
        .isTrue();
    assertThat(at.purge()).isEqualTo(Purge.startOver("drift"));
  }

  @Test
  void advanced_movesOnAfterTheLastBatch_watermarkTakesTheIndexsWord() {
    StreamPosition at = new StreamPosition();
    assertThat(at.started()).isFalse();
    at.start(4, false);
    assertThat(at.started()).isTrue();
    at.advanced(9);
    assertThat(at.expected()).isEqualTo(10);
    assertThat(at.applied()).isEqualTo(9);
    at.watermark(6);
    assertThat(at.expected()).isEqualTo(7);
    assertThat(at.applied()).isEqualTo(6);
  }
}
