package io.kvindex.simulator;

import io.kvindex.event.KvEventBatch;

/** Turns one batch into the msgpack payload frame. */
@FunctionalInterface
interface PayloadEncoder {
  byte[] encode(KvEventBatch batch);
}
