package io.kvindex.ingester.stream;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.event.KvEventBatch;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The payloads a stream applied last, and what a live or replayed copy is found to be by them. */
class RecentlyAppliedTest {

  private static final KvEventBatch NONE = KvEventBatch.of(0, List.of(), null);

  private static Batch batch(long seq, int hash) {
    return new Batch(seq, hash, NONE, null, true, 0);
  }

  @Test
  void resent_onlyTheSamePayloadWithinTheWindow() {
    RecentlyApplied recent = new RecentlyApplied();
    for (long seq = 0; seq <= RecentlyApplied.BATCHES; seq++) {
      recent.add(batch(seq, (int) seq));
    }
    assertThat(recent.resent(batch(1, 1))).isTrue();
    assertThat(recent.resent(batch(1, 99))).as("another payload").isFalse();
    assertThat(recent.resent(batch(0, 0))).as("past the window").isFalse();
  }

  @Test
  void checkableFrom_oneEarlyOnlyFromTheNextSequenceWithTheLastRemembered() {
    RecentlyApplied recent = new RecentlyApplied();
    assertThat(recent.checkableFrom(5, 5)).as("nothing remembered").isEqualTo(5);
    recent.add(batch(4, 4));
    assertThat(recent.checkableFrom(5, 5)).isEqualTo(4);
    assertThat(recent.checkableFrom(6, 5)).as("a gap's replay further on").isEqualTo(6);
    recent.clear();
    assertThat(recent.checkableFrom(5, 5)).isEqualTo(5);
  }

  @Test
  void sameEngine_anotherPayloadUnderAnAppliedSequence_unlessItCannotBeRead() {
    RecentlyApplied recent = new RecentlyApplied();
    recent.add(batch(4, 4));
    assertThat(recent.sameEngine(List.of(batch(4, 4), batch(5, 99)), 5)).isTrue();
    assertThat(recent.sameEngine(List.of(batch(4, 99), batch(5, 5)), 5)).isFalse();
    Batch unreadable = new Batch(4, 99, NONE, "truncated", false, 0);
    assertThat(recent.sameEngine(List.of(unreadable), 5)).isTrue();
    assertThat(recent.sameEngine(List.of(batch(4, 99)), 4)).as("not applied yet").isTrue();
  }
}
