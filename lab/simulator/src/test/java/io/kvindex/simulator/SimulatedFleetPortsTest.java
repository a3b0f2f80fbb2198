package io.kvindex.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetSocketAddress;
import org.junit.jupiter.api.Test;

class SimulatedFleetPortsTest {

  @Test
  void shifted_realPortIsABase() {
    assertThat(SimulatedFleet.Builder.shifted("tcp://0.0.0.0:5600", 3))
        .isEqualTo("tcp://0.0.0.0:5603");
    assertThat(SimulatedFleet.Builder.shifted("tcp://0.0.0.0:5600", 0))
        .isEqualTo("tcp://0.0.0.0:5600");
  }

  @Test
  void shifted_freePortStaysFree() {
    assertThat(SimulatedFleet.Builder.shifted("tcp://127.0.0.1:0", 5))
        .isEqualTo("tcp://127.0.0.1:0");
    assertThat(SimulatedFleet.Builder.shifted(null, 5)).isNull();
  }

  @Test
  void shifted_httpAddress_realPortIsABaseFreeStaysFree() {
    assertThat(SimulatedFleet.Builder.shiftedAddress(new InetSocketAddress("0.0.0.0", 5800), 3))
        .isEqualTo(new InetSocketAddress("0.0.0.0", 5803));
    assertThat(SimulatedFleet.Builder.shiftedAddress(new InetSocketAddress("127.0.0.1", 0), 3))
        .isEqualTo(new InetSocketAddress("127.0.0.1", 0));
  }

  @Test
  void build_freePortTemplate_podsGetDistinctPorts() {
    try (SimulatedFleet fleet = SimulatedFleet.builder().pods(2).build()) {
      assertThat(fleet.pods().get(0).endpoints().get(0).publish())
          .isNotEqualTo(fleet.pods().get(1).endpoints().get(0).publish());
    }
  }
}
