package io.kvindex.demo;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.PodMatch;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class RouterOraclePickTest {
  private static final List<String> PODS = List.of("pod-0", "pod-1", "pod-2", "pod-3");

  /**
   * Every pod holds the prompts' shared first block (a system prompt) and nothing more: the
   * tie-break must spread them by what follows it, as kvindex's routers do, not send all to one pod
   * as hashing the first block alone did.
   */
  @Test
  void pick_tieOnASharedFirstBlockSpreadsByWhatFollowsIt() {
    RouterOraclePick oracle = new RouterOraclePick();
    List<PodMatch> matches =
        PODS.stream().map(p -> new PodMatch(p, 1, 1, 1, 1.0, Map.of(0, 1), false)).toList();
    Map<String, Double> idle = Map.of();
    Set<String> chosen = new HashSet<>();
    for (int i = 0; i < 32; i++) {
      long[] keys = {42L, 1000L + i, 2000L + i};
      chosen.add(oracle.pick(42L, keys, 16, matches, idle));
      assertThat(oracle.pick(42L, keys, 16, matches, idle))
          .as("the same prompt goes to the same pod")
          .isEqualTo(oracle.pick(42L, keys.clone(), 16, matches, idle));
    }
    assertThat(chosen).hasSizeGreaterThan(2);
  }
}
