package io.kvindex.index;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class LookupRequestTest {
  private static final long[] KEYS = {1, 2};

  @Test
  void candidates_inOrderWithoutDuplicates_andUnmodifiable() {
    LookupRequest request =
        LookupRequest.of("m", KeyMode.ENGINE, KEYS, List.of("b", "a", "b", "c"));
    assertThat(request.candidatePods()).containsExactly("b", "a", "c");
    assertThatThrownBy(() -> request.candidatePods().add("d"))
        .isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> request.candidatePods().iterator().remove())
        .isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> request.candidatePods().clear())
        .isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void candidates_givenSetIsCopied_laterChangesDoNotShow() {
    Set<String> pods = new LinkedHashSet<>(List.of("a", "b"));
    LookupRequest request = new LookupRequest("m", KeyMode.ENGINE, KEYS, pods, 0);
    pods.add("c");
    assertThat(request.candidatePods()).containsExactly("a", "b");
  }

  @Test
  void equalRequests_madeEitherWay() {
    LookupRequest made = LookupRequest.of("m", KeyMode.ENGINE, KEYS, List.of("a", "b"));
    LookupRequest built =
        new LookupRequest(
            "m", KeyMode.ENGINE, KEYS.clone(), new LinkedHashSet<>(List.of("a", "b")), 0);
    assertThat(made).isEqualTo(built).hasSameHashCodeAs(built);
    assertThat(made.candidatePods()).isEqualTo(Set.of("a", "b"));
  }

  @Test
  void candidates_badName_saysWhich() {
    assertThatThrownBy(() -> LookupRequest.of("m", KeyMode.ENGINE, KEYS, List.of("a", "")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("candidate pod");
  }
}
