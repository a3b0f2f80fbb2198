package io.kvindex.index;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import org.junit.jupiter.api.Test;

class CandidatePodsTest {
  @Test
  void of_equalLists_giveOneInstance_checkedOnce() {
    List<String> given = new ArrayList<>(List.of("p-1", "p-2", "p-3"));
    CandidatePods first = CandidatePods.of(given);
    assertThat(CandidatePods.of(new ArrayList<>(given))).isSameAs(first);
    assertThat(CandidatePods.of(List.copyOf(given))).isSameAs(first);
    assertThat(CandidatePods.of(new LinkedHashSet<>(given))).isSameAs(first);
    assertThat(CandidatePods.of(first)).isSameAs(first);
    assertThat(CandidatePods.of(first.asSet())).isSameAs(first);
  }

  @Test
  void of_listChangedAfterwards_givesItsNewContent() {
    List<String> given = new ArrayList<>(List.of("q-1", "q-2"));
    CandidatePods before = CandidatePods.of(given);
    given.add("q-3");
    CandidatePods after = CandidatePods.of(given);
    assertThat(before).containsExactly("q-1", "q-2");
    assertThat(after).containsExactly("q-1", "q-2", "q-3");
    assertThat(after).isNotSameAs(before);
  }

  @Test
  void of_duplicates_droppedInOrder_andTheSameListGivesTheSameAnswer() {
    List<String> given = List.of("r-b", "r-a", "r-b", "r-c");
    CandidatePods pods = CandidatePods.of(given);
    assertThat(pods).containsExactly("r-b", "r-a", "r-c");
    assertThat(CandidatePods.of(new ArrayList<>(given))).isSameAs(pods);
    assertThat(pods.asSet()).containsExactly("r-b", "r-a", "r-c");
    assertThat(pods.asSet().contains("r-a")).isTrue();
    assertThat(pods.asSet().contains("r-d")).isFalse();
  }

  @Test
  void list_andSet_areUnmodifiable() {
    CandidatePods pods = CandidatePods.of(List.of("s-1", "s-2"));
    assertThatThrownBy(() -> pods.add("s-3")).isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> pods.iterator().remove())
        .isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> pods.asSet().remove("s-1"))
        .isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void of_badNames_refused_evenAfterAGoodListWasKept() {
    CandidatePods.of(List.of("t-1"));
    List<String> withNull = new ArrayList<>(List.of("t-1"));
    withNull.add(null);
    assertThatThrownBy(() -> CandidatePods.of(withNull))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("candidate pod");
    assertThatThrownBy(() -> CandidatePods.of(List.of("t-1", "")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("candidate pod");
    assertThat(CandidatePods.of(List.of("t-1", " ")).anyBlank()).isTrue();
    assertThat(CandidatePods.of(List.of("t-1")).anyBlank()).isFalse();
  }

  @Test
  void equals_andHashCode_asAList() {
    CandidatePods pods = CandidatePods.of(List.of("u-1", "u-2"));
    assertThat(pods).isEqualTo(List.of("u-1", "u-2")).hasSameHashCodeAs(List.of("u-1", "u-2"));
    assertThat(List.of("u-1", "u-2")).isEqualTo(pods);
  }
}
