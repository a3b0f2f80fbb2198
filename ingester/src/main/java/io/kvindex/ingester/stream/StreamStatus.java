package io.kvindex.ingester.stream;

import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * What other threads see of a running stream, and may ask of it: its state and progress for
 * /readyz, the coordinator and the reconciler, and the purges and restarts they request, which the
 * stream's worker takes up at its next step. Thread-safe.
 */
public final class StreamStatus {
  /** A stream's health as /readyz reports it. */
  public enum State {
    STARTING,
    RUNNING,
    FAILED,
    FENCED,
    STOPPED
  }

  private final ConcurrentLinkedQueue<String> purgeRequests = new ConcurrentLinkedQueue<>();
  private volatile boolean restartRequested;
  private volatile boolean resetRequested;
  private volatile String resyncRequest;
  private volatile boolean engineAsleep;
  private volatile EngineCapacity capacity = EngineCapacity.UNKNOWN;
  private volatile State state = State.STARTING;
  private volatile String lastError = "";
  private volatile long applied = -1;
  private volatile long liveReceived;
  private volatile long lastAppliedNanos;
  private volatile long aliveAtNanos;
  private volatile long observedAtNanos;
  private volatile int restarts;
  private volatile boolean purgePending;

  StreamStatus(long nowNanos) {
    this.lastAppliedNanos = nowNanos - Long.MAX_VALUE / 2;
    this.aliveAtNanos = nowNanos;
    this.observedAtNanos = nowNanos;
  }

  /**
   * How long the worker has looked for a sign of its engine and found none: from the last proof of
   * life to the worker's last step. A worker that does not step (paused, blocked) adds nothing.
   */
  public long silentNanos() {
    return observedAtNanos - aliveAtNanos;
  }

  void aliveAt(long nanos) {
    aliveAtNanos = nanos;
  }

  /** A step of the worker at {@code nanos}, whose socket was {@code connected} or not. */
  void observed(long nanos, boolean connected) {
    if (connected) {
      aliveAtNanos = nanos;
    }
    observedAtNanos = nanos;
  }

  public State state() {
    return state;
  }

  /** The last real error, as text, while the state is FAILED. */
  public String lastError() {
    return lastError;
  }

  /** The last sequence applied, or -1. */
  public long applied() {
    return applied;
  }

  /** When a batch was last applied, on the ingester's ticker. */
  public long lastAppliedNanos() {
    return lastAppliedNanos;
  }

  /** Engine restarts handled so far. */
  public int restarts() {
    return restarts;
  }

  /** Live messages received so far. */
  public long liveReceived() {
    return liveReceived;
  }

  /** True while a purge is waiting (requested, or met a temporary error). */
  public boolean purgePending() {
    return purgePending || !purgeRequests.isEmpty();
  }

  /** Asks for a purge (level-triggered callers may ask again until it is done). */
  public void requestPurge(String reason) {
    purgeRequests.add(reason);
  }

  /**
   * Says the engine restarted (a new incarnation seen on /metrics), for restarts the sequence
   * numbers cannot show: the new engine may already have passed the old watermark.
   */
  public void requestRestart() {
    restartRequested = true;
  }

  /** The engine's sleep state as its {@code /metrics} said at the last scrape (level). */
  public void engineAsleep(boolean asleep) {
    engineAsleep = asleep;
  }

  boolean engineAsleep() {
    return engineAsleep;
  }

  /**
   * The engine's KV-cache capacity as its {@code /metrics} said at the last scrape ({@code
   * vllm:cache_config_info}); {@link EngineCapacity#UNKNOWN} while unknown.
   */
  public void capacity(EngineCapacity capacity) {
    this.capacity = capacity;
  }

  /** The engine's KV-cache capacity as last scraped. */
  public EngineCapacity capacity() {
    return capacity;
  }

  /** The engine's {@code num_gpu_blocks} as last scraped; 0 while unknown. */
  public int capacityBlocks() {
    return capacity.gpuBlocks();
  }

  /** Says the index lost (or may have lost) what it held of the stream; see Sequencer#indexLost. */
  public void requestIndexReset() {
    resetRequested = true;
  }

  /**
   * A router asked for a drift resync of the stream's pod ({@code note} says who and why): purge,
   * then replay what the ring covers.
   */
  public void requestResync(String note) {
    resyncRequest = note;
  }

  String takeResyncRequest() {
    String note = resyncRequest;
    resyncRequest = null;
    return note;
  }

  boolean takeIndexResetRequest() {
    boolean asked = resetRequested;
    resetRequested = false;
    return asked;
  }

  String nextPurgeRequest() {
    return purgeRequests.peek();
  }

  void dropPurgeRequest() {
    purgeRequests.poll();
  }

  boolean takeRestartRequest() {
    boolean asked = restartRequested;
    restartRequested = false;
    return asked;
  }

  void state(State state, String lastError) {
    this.state = state;
    this.lastError = lastError;
  }

  void progress(Sequencer sequencer) {
    applied = sequencer.applied();
    restarts = sequencer.restarts();
    purgePending = sequencer.purgePending();
  }

  void appliedAt(long nanos) {
    lastAppliedNanos = nanos;
  }

  void received() {
    liveReceived++;
  }
}
