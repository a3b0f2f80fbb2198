package io.kvindex.index;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class GroupTokensTest {

  @Test
  void groupTokens_isTheSortedMapOfItsArrays() {
    Map<Integer, Integer> map = PodMatch.groupTokens(new int[] {0, 2, 5}, new int[] {96, 80, 64});
    Map<Integer, Integer> expected = new TreeMap<>(Map.of(5, 64, 0, 96, 2, 80));
    assertThat(map).isEqualTo(expected).hasSameHashCodeAs(expected);
    assertThat(map.keySet()).containsExactly(0, 2, 5);
    assertThat(map.get(2)).isEqualTo(80);
    assertThat(map.get(1)).isNull();
    assertThat(map.containsKey("2")).isFalse();
    PodMatch match = new PodMatch("p", 4, 4, 4, 4.0, Map.of(), false, map);
    assertThat(match.groupTokens()).isEqualTo(expected);
  }

  @Test
  void groupTokens_isImmutable() {
    Map<Integer, Integer> map = PodMatch.groupTokens(new int[] {0}, new int[] {16});
    assertThatThrownBy(() -> map.put(1, 2)).isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> map.entrySet().iterator().remove())
        .isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void groupTokens_unsortedGroups_areRejected() {
    assertThatThrownBy(() -> PodMatch.groupTokens(new int[] {1, 0}, new int[] {16, 16}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ascending");
  }
}
