/**
 * vLLM's KV-event wire format: {@link io.kvindex.wire.KvEventDecoder} turns a msgpack {@code
 * KVEventBatch} payload of any vLLM era into {@link io.kvindex.event.KvEventBatch}, {@link
 * io.kvindex.wire.KvEventEncoder} writes one byte for byte as a chosen {@link
 * io.kvindex.wire.WireEra} would, and {@link io.kvindex.wire.ZmqFrames} handles the ZeroMQ frames
 * around it (live, replay request, replay reply). Malformed input raises a {@link
 * io.kvindex.wire.WireFormatException}: {@link io.kvindex.wire.MalformedEventException} for
 * payloads (field and byte offset), {@link io.kvindex.wire.MalformedFramesException} for frames. No
 * sockets and no threads here.
 */
package io.kvindex.wire;
