package io.kvindex.ingester;

import io.kvindex.event.KvEventBatch;

/** Turns one msgpack payload into a batch. Implementations are thread-safe. */
@FunctionalInterface
interface BatchDecoder {
  /**
   * Decodes a payload.
   *
   * @throws IllegalArgumentException (or a subtype) if the payload is malformed
   */
  KvEventBatch decode(byte[] payload);
}
