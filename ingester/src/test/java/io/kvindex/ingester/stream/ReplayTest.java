package io.kvindex.ingester.stream;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.ingester.Fleet;
import io.kvindex.wire.EventMessage;
import io.kvindex.wire.ReplayFraming;
import java.time.Duration;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.zeromq.ZContext;

class ReplayTest {
  @ParameterizedTest
  @EnumSource(ReplayFraming.class)
  void fetch_returnsTheRequestedRangeThenEnds(ReplayFraming framing) {
    try (Fleet fleet = Fleet.start(1, 9, b -> b.replayFraming(framing).replayBufferSteps(8));
        ZContext ctx = new ZContext()) {
      String endpoint = fleet.pod(0).endpoints().get(0).replay();
      for (int i = 0; i < 40; i++) { // a fresh DEALER each time: replies must never go missing
        fleet.traffic(2);
        long next = fleet.pod(0).nextSequence(0);
        Replays.Result r = Replays.fetch(ctx, endpoint, next - 2, Duration.ofSeconds(2));
        assertThat(r.ended()).isTrue();
        assertThat(r.batches()).extracting(EventMessage::seq).containsExactly(next - 2, next - 1);
      }
      Replays.Result old = Replays.fetch(ctx, endpoint, 0, Duration.ofSeconds(2));
      assertThat(old.firstSeq()).as("older than the ring: from the oldest held").isPositive();
    }
  }
}
