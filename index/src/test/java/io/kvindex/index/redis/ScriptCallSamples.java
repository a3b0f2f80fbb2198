package io.kvindex.index.redis;

import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.PurgeMode;
import io.kvindex.index.StreamId;
import java.util.List;

/** One call of every script whose call this package builds, with sample values. */
final class ScriptCallSamples {
  private ScriptCallSamples() {}

  static List<ScriptCall.Source> all() {
    StreamId stream = new StreamId("m", "p", 1);
    Lease lease = new Lease(7, "owner");
    byte[] epoch = Bytes.ascii("epoch");
    return List.of(
        new InitCall(1, 3, "epoch", RedisPrefixIndex.FORMAT),
        new IdentityCall(2),
        new LookupCall(
            2, List.of(new byte[] {1}, new byte[] {2}), List.of(new byte[] {3}, new byte[] {4})),
        new ApplyCall(
            RedisStreamKeys.of(new KeySchema("samples", 2), stream, KeyMode.ENGINE),
            4,
            5,
            lease,
            1000,
            64,
            false,
            2,
            "ab",
            epoch,
            0,
            2,
            List.of(new byte[] {1}, new byte[] {2})),
        new StagedCall(stream),
        new PublishCall(stream, lease, epoch, 1000),
        new PurgeCall(stream, lease, PurgeMode.RESET_WATERMARK, epoch),
        new StreamReadCall(stream),
        new GcCall(0, 100),
        new SweepCall(0, 100, 60_000),
        new LeaseCall("acquire", stream, "owner", 1000, 0),
        new LeaseCall("renew", stream, "owner", 1000, 7),
        new RegistryCall("replica", 1000, "process"),
        new IncarnationCall.Get(stream),
        new IncarnationCall.Set(stream, "", "new", 1000),
        new InferCall.Mark("m", "p", 100, 1000),
        new InferCall.MarkState("m", "p"),
        new InferCall.HandOver(stream, Bytes.ascii("10|"), 1000),
        new InferCall.HandoverState(stream),
        new InferCall.Touch("m", "p", 1, new byte[8], 0, 1000, new byte[8], 1),
        new InferCall.Read(stream, "0-0", 10),
        new InferCall.Last(stream),
        new LagCall.Report(stream, 5, 1000),
        new LagCall.Reports("m", "p"),
        new ResyncCall.Request("m", "p", "note", 1000),
        new ResyncCall.Take(stream, "call", 1000),
        new NoteCall(Bytes.ascii("hash"), 0, List.of(new byte[] {1}, new byte[] {2})),
        new TimeCall(0),
        new PodsCall(0, "m"),
        new HeartbeatCall("m", "p", 1000),
        new SpeculateCall("m", KeyMode.ENGINE, "p", new long[] {1, 2, 3}, 0, 1000));
  }
}
