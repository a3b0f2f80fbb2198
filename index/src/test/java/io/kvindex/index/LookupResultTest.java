package io.kvindex.index;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class LookupResultTest {
  @ParameterizedTest
  @ValueSource(ints = {0, 3, 40})
  void inOrder_isTheMapOfItsMatches_inOrder(int n) {
    PodMatch[] matches = new PodMatch[n];
    Map<String, PodMatch> expected = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) {
      matches[i] = new PodMatch("pod-" + (n - i), i, i, i, i, Map.of());
      expected.put(matches[i].pod(), matches[i]);
    }
    LookupResult result = LookupResult.inOrder(matches, true);

    assertThat(result.pods()).isEqualTo(expected).hasSameHashCodeAs(expected);
    assertThat(result.pods().keySet()).containsExactlyElementsOf(expected.keySet());
    assertThat(result.pods().values()).containsExactlyElementsOf(expected.values());
    for (PodMatch match : matches) {
      assertThat(result.pods().get(match.pod())).isSameAs(match);
      assertThat(result.pods()).containsKey(match.pod());
    }
    assertThat(result.pods().get("absent")).isNull();
    assertThat(result.pods().getOrDefault("absent", PodMatch.none("absent")))
        .isEqualTo(PodMatch.none("absent"));
    assertThat(result).isEqualTo(new LookupResult(expected, true));
  }

  @Test
  void inOrder_isUnmodifiable() {
    LookupResult result = LookupResult.inOrder(new PodMatch[] {PodMatch.none("a")}, true);
    assertThatThrownBy(() -> result.pods().put("b", PodMatch.none("b")))
        .isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> result.pods().values().clear())
        .isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> result.pods().entrySet().iterator().next().setValue(null))
        .isInstanceOf(UnsupportedOperationException.class);
  }
}
