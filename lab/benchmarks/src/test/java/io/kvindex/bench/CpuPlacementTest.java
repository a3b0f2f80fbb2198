package io.kvindex.bench;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class CpuPlacementTest {

  @Test
  void parseCpuList_expandsRangesAndSingleCpus() {
    assertThat(CpuPlacement.parseCpuList(" 0-3,6,8-9\n")).containsExactly(0, 1, 2, 3, 6, 8, 9);
  }

  @Test
  void parseCpuList_oneCpu() {
    assertThat(CpuPlacement.parseCpuList("5")).containsExactly(5);
  }
}
