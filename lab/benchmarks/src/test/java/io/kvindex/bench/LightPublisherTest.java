package io.kvindex.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEventBatch;
import io.kvindex.wire.KvEventDecoder;
import io.kvindex.wire.KvEventEncoder;
import io.kvindex.wire.WireEra;
import java.util.List;
import org.junit.jupiter.api.Test;

class LightPublisherTest {

  @Test
  void stamp_writesTheTimestampAnEncodedBatchDecodesTo() {
    for (WireEra era : WireEra.values()) {
      KvEventBatch batch =
          KvEventBatch.of(1.0, List.of(BlockStored.of(List.of(5L), null, List.of(7), 16)), 0);
      byte[] payload = KvEventEncoder.of(era).encode(batch);

      LightPublisher.stamp(payload, 1234.5);

      assertThat(KvEventDecoder.decode(payload).timestamp()).as(era.name()).isEqualTo(1234.5);
    }
  }

  @Test
  void stamp_notABatch_refused() {
    assertThatThrownBy(() -> LightPublisher.stamp(new byte[12], 1.0))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
