package io.kvindex.wire;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;

/**
 * One published batch as it arrived over ZeroMQ: topic, sequence number and the undecoded msgpack
 * payload. Immutable by convention: the payload array is not copied (the ingester decodes every
 * one), so nobody may modify it. Thread-safe when so used.
 *
 * @param topic the topic frame as UTF-8, or {@code null} when the frames carried none (replay
 *     before vLLM PR #45177)
 * @param seq the publisher's sequence number: starts at 0 when the engine starts, +1 per batch
 * @param payload the msgpack {@code KVEventBatch}, for {@link KvEventDecoder#decode(byte[])}
 */
public record EventMessage(String topic, long seq, byte[] payload) {

  public EventMessage {
    Objects.requireNonNull(payload, "payload");
  }

  /** The topic's bytes (empty for a {@code null} topic). */
  byte[] topicBytes() {
    return topic == null ? new byte[0] : topic.getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof EventMessage m
        && seq == m.seq
        && Objects.equals(topic, m.topic)
        && Arrays.equals(payload, m.payload);
  }

  @Override
  public int hashCode() {
    return Objects.hash(topic, seq) * 31 + Arrays.hashCode(payload);
  }

  @Override
  public String toString() {
    return "EventMessage[topic="
        + topic
        + ", seq="
        + seq
        + ", payload="
        + payload.length
        + " bytes]";
  }
}
