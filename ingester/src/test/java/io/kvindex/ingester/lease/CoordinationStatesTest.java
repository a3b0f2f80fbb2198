package io.kvindex.ingester.lease;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.StreamId;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The coordinator's pure decisions: registration states, fair shares, preference, the watch. */
class CoordinationStatesTest {

  @ParameterizedTest(name = "{0}, conflict={1} -> {2}")
  @CsvSource({
    "UNREGISTERED, false, REGISTERED",
    "UNREGISTERED, true,  CONFLICTED",
    "REGISTERED,   false, REGISTERED",
    "REGISTERED,   true,  CONFLICTED",
    "CONFLICTED,   false, REGISTERED",
    "CONFLICTED,   true,  CONFLICTED",
  })
  void registration_movesOnEachAnswer(
      Registration.State from, boolean conflict, Registration.State to) {
    assertThat(from.on(conflict)).isEqualTo(to);
  }

  @ParameterizedTest(name = "{0} streams, {1} replicas -> {2}")
  @CsvSource({"0, 1, 0", "8, 1, 8", "8, 2, 4", "9, 2, 5", "3, 4, 1", "4, 4, 1", "5, 4, 2"})
  void fair_isTheCeilingOfStreamsPerReplica(int streams, int replicas, int fair) {
    assertThat(Shares.fair(streams, replicas)).isEqualTo(fair);
  }

  @Test
  void ranked_isEachReplicasOwnOrderAndStable() {
    List<StreamId> streams = new ArrayList<>();
    for (int i = 0; i < 16; i++) {
      streams.add(StreamId.of("m", "pod-" + i));
    }
    List<StreamId> a = new Shares("a").ranked(streams);
    assertThat(a).containsExactlyInAnyOrderElementsOf(streams);
    List<StreamId> reversed = new ArrayList<>(streams);
    Collections.reverse(reversed);
    assertThat(new Shares("a").ranked(reversed)).isEqualTo(a);
    assertThat(new Shares("b").ranked(streams)).isNotEqualTo(a);
    // a stream leaving keeps everyone else's order: a returning replica gets much the same back
    List<StreamId> fewer = new ArrayList<>(a);
    StreamId gone = fewer.remove(3);
    assertThat(new Shares("a").ranked(streams.stream().filter(s -> !s.equals(gone)).toList()))
        .isEqualTo(fewer);
  }

  @Test
  void ranked_spreadsTwoReplicasTopChoices() {
    List<StreamId> streams = new ArrayList<>();
    for (int i = 0; i < 64; i++) {
      streams.add(StreamId.of("m", "pod-" + i));
    }
    Set<StreamId> a = new HashSet<>(new Shares("a").ranked(streams).subList(0, 32));
    Set<StreamId> b = new HashSet<>(new Shares("b").ranked(streams).subList(0, 32));
    a.retainAll(b);
    assertThat(a).as("the two halves overlap far less than fully").hasSizeLessThan(28);
  }

  @Test
  void releaseWatch_startsOnlyWhenShortAfterAChange() {
    ReleaseWatch w = new ReleaseWatch(0);
    assertThat(w.watching(0)).isFalse();
    assertThat(w.shortAfterChange(2, 8, 2, 4)).as("first round: everything changed").isTrue();
    w.start(7, 100);
    w.roundEnded(2);
    assertThat(w.watching(50)).isTrue();
    assertThat(w.watching(100)).isFalse();
    assertThat(w.released(7)).isFalse();
    assertThat(w.released(8)).isTrue();
    w.seen(8);
    assertThat(w.released(8)).isFalse();
    assertThat(w.shortAfterChange(2, 8, 2, 4)).as("short, but nothing changed").isFalse();
    w.roundEnded(2);
    assertThat(w.shortAfterChange(2, 8, 1, 4)).as("lost a lease").isTrue();
    w.roundEnded(1);
    assertThat(w.shortAfterChange(3, 8, 1, 3)).as("a replica joined").isTrue();
    assertThat(w.shortAfterChange(3, 9, 4, 3)).as("changed, but not short").isFalse();
    w.start(8, 200);
    w.stop(60);
    assertThat(w.watching(61)).as("stopped once the share is held").isFalse();
  }
}
