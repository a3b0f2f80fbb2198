package io.kvindex.index;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;

/**
 * What routers and ingesters tell each other through the index (the closed loop): resync requests
 * from routers that saw a pod drift, the pods whose evictions are inferred and the touches that
 * keep that inference true, the inference handed over between owners, and how far each stream's
 * owner is behind its engine.
 *
 * <p>As in every role of the {@link PrefixIndex}, a method named {@code ...Async} returns a future
 * and never blocks; the others block. Implementations are thread-safe.
 */
public interface ClosedLoopStore {

  /** The longest note of a resync request ({@link #requestResyncAsync}), in characters. */
  int MAX_RESYNC_NOTE = 256;

  /**
   * Asks the ingester that owns the pod's streams to resync them: purge what the index holds of
   * them, then replay what the engine's replay ring still covers. One request stands per pod per
   * {@code interval}, whoever asks (routers judging the pod from their own observations make it;
   * the first of them records it), so a pod is resynced at most once per interval.
   *
   * @param note who asked and why, for the owner's log; at most {@value #MAX_RESYNC_NOTE}
   *     characters
   * @param interval how long the request stands and keeps others out, at least 1 ms
   * @return whether this call's request stands, one already did, or Redis was unavailable
   * @throws IllegalArgumentException for a longer note
   */
  CompletableFuture<ResyncStatus> requestResyncAsync(
      String model, String pod, String note, Duration interval);

  /**
   * Takes the standing resync request of the stream's pod, once per stream: the owner of the stream
   * calls this, then resyncs it (each rank of the pod takes it once, whichever replica owns that
   * rank). The request keeps standing, taken, until its interval ends. A stream takes no request
   * within {@code spacing} of the last one it took (the index records when, for every owner), so a
   * pod is resynced at most once per spacing whatever routers ask and however often: a request made
   * sooner is taken once the spacing has passed, if it still stands.
   *
   * @param spacing the least time between two resyncs of the stream, at least 1 ms
   * @return the request's note, or empty if none stands, this stream took it already, or it took
   *     the last one less than {@code spacing} ago
   * @throws io.kvindex.redis.RedisUnavailableException if Redis kept failing temporarily
   */
  Optional<String> takeResync(StreamId stream, Duration spacing);

  /**
   * Marks the pod's evictions as inferred until now + {@code ttl}: its engine does not publish them
   * all, so the owner of each of its streams keeps a model of the engine's cache and removes what
   * the model evicts. Routers that find the mark send each observed request's blocks ({@link
   * #touchAsync}), which keep the model's order of use true. The owners refresh the mark while they
   * infer.
   *
   * @param capacityBlocks the engine's KV-cache capacity in blocks, the model's size; at least 1
   * @return true if marked, false if Redis was unavailable
   */
  boolean markEvictionsInferred(String model, String pod, int capacityBlocks, Duration ttl);

  /**
   * The capacity under which the pod's evictions are inferred ({@link #markEvictionsInferred}), or
   * empty when they are not. Completes exceptionally with a {@link
   * io.kvindex.redis.RedisUnavailableException} when Redis did not answer within the write retry
   * budget.
   */
  CompletableFuture<OptionalInt> evictionsInferredAsync(String model, String pod);

  /** Blocks one touch carries at most: the prompt's first ones. */
  int MAX_TOUCH_BLOCKS = 16_384;

  /** Touches a pod keeps at most: older ones are dropped as new ones come. */
  int MAX_TOUCHES = 4096;

  /**
   * Bytes of touches a pod keeps at most (each touch counted as its block keys' 8 bytes each plus
   * {@value #TOUCH_OVERHEAD_BYTES}): older ones are dropped as new ones come, so a pod whose
   * touches nobody reads holds at most this much (4 MiB).
   */
  int MAX_TOUCH_BYTES = 4 << 20;

  /** What a touch counts towards {@link #MAX_TOUCH_BYTES} beside its block keys. */
  int TOUCH_OVERHEAD_BYTES = 64;

  /**
   * Bytes of touches one {@link #touches} read returns at most, past its first touch (256 KiB): a
   * read holds Redis for about as long as this takes to copy.
   */
  int MAX_TOUCH_READ_BYTES = 256 << 10;

  /**
   * How long a reader's cursor holds back the trimming of its pod's touches after its last read (1
   * minute): a reader gone longer than this no longer keeps the touches it has not read.
   */
  Duration TOUCH_READER_TTL = Duration.ofMinutes(1);

  /**
   * Records that an observed request went to {@code pod}, whose evictions are inferred, with the
   * prompt's block keys, how many of them the engine served from its cache and the prediction's
   * error. The owners of the pod's streams read them in order ({@link #touches}) and restore from
   * them only what their own model removed, within the cached depth; what every current reader has
   * read is dropped. A pod keeps its latest {@value #MAX_TOUCHES} touches and at most {@value
   * #MAX_TOUCH_BYTES} bytes of them for {@code ttl} after the last one. Best effort, never blocks.
   *
   * @param blockKeys the prompt's block keys, block 0 first; only the first {@value
   *     #MAX_TOUCH_BLOCKS} are recorded (read, never kept)
   * @param errorBlocks the prediction's error for the request, in blocks (see {@link Touch})
   * @param cachedBlocks the blocks the engine reported cached, from block 0, at least 0
   * @return true if recorded, false if Redis was unavailable
   */
  CompletableFuture<Boolean> touchAsync(
      String model,
      String pod,
      int rank,
      long[] blockKeys,
      int errorBlocks,
      int cachedBlocks,
      Duration ttl);

  /**
   * The touches of the stream's pod recorded after {@code cursor}, oldest first, at most {@code
   * max} and about {@link #MAX_TOUCH_READ_BYTES}. A null cursor reads none and returns the cursor
   * of the latest touch, from which a reader that starts now goes on. Each read notes the stream's
   * cursor, and the touches every reader of the pod (each rank that read in the last {@link
   * #TOUCH_READER_TTL}) has read are dropped.
   *
   * @throws io.kvindex.redis.RedisUnavailableException if Redis kept failing temporarily
   */
  Touches touches(StreamId stream, String cursor, int max);

  /**
   * Leaves the stream's eviction model, as far as its next owner needs it, in the index for {@code
   * ttl} (its owner refreshes it while it infers): a new owner of the stream reads it ({@link
   * #inferenceHandover}). Best effort, never blocks.
   *
   * @return true if recorded, false if Redis was unavailable
   */
  CompletableFuture<Boolean> handOverInferenceAsync(
      StreamId stream, InferenceHandover handover, Duration ttl);

  /**
   * What the stream's former owner left of its eviction model ({@link #handOverInferenceAsync}), or
   * empty when none stands.
   *
   * @throws io.kvindex.redis.RedisUnavailableException if Redis kept failing temporarily
   */
  Optional<InferenceHandover> inferenceHandover(StreamId stream);

  /**
   * Records how far the stream's owner is behind its engine, for {@code ttl}: routers read the
   * reports of a pod's streams ({@link #ingestLagAsync}) before they take a prediction error for
   * drift. Best effort, never blocks.
   *
   * @param lag how far behind, at least 0
   * @return true if recorded, false if Redis was unavailable
   */
  CompletableFuture<Boolean> reportLagAsync(StreamId stream, Duration lag, Duration ttl);

  /**
   * The latest report of each of the pod's streams that still stands ({@link #reportLagAsync}), in
   * no order; empty when none does (no owner reports, or none has yet). Completes exceptionally
   * with a {@link io.kvindex.redis.RedisUnavailableException} when Redis did not answer within the
   * write retry budget.
   */
  CompletableFuture<List<IngestLag>> ingestLagAsync(String model, String pod);
}
