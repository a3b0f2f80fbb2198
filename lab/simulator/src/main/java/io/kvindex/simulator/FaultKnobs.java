package io.kvindex.simulator;

import java.time.Duration;
import java.util.Objects;

/**
 * Faults a pod injects, changeable while it runs. Most are its publisher's, on the live stream:
 * dropped and silenced batches still take their sequence number and stay in the replay ring, as a
 * message lost on the network would, and replay is unaffected by them. {@link #silentEviction} is
 * the engine's: the events it leaves out are never published, so the ring lacks them too.
 * Thread-safe.
 */
public final class FaultKnobs {
  private volatile double dropFraction;
  private volatile double duplicateFraction;
  private volatile Duration delay = Duration.ZERO;
  private volatile boolean silenced;
  private volatile double garbleFraction;
  private volatile double reorderFraction;
  private volatile boolean silentEviction;

  FaultKnobs() {}

  /** Drops this fraction (0 to 1) of live messages at random. Default 0. */
  public FaultKnobs dropFraction(double fraction) {
    this.dropFraction = checkFraction(fraction, "dropFraction");
    return this;
  }

  /** Sends this fraction (0 to 1) of live messages twice. Default 0. */
  public FaultKnobs duplicateFraction(double fraction) {
    this.duplicateFraction = checkFraction(fraction, "duplicateFraction");
    return this;
  }

  /**
   * Damages this fraction (0 to 1) of live messages' payloads (cut to half their length), as a
   * corrupting network or a publisher bug would; the replay ring keeps the intact copy. Default 0.
   */
  public FaultKnobs garbleFraction(double fraction) {
    this.garbleFraction = checkFraction(fraction, "garbleFraction");
    return this;
  }

  /**
   * Sends this fraction (0 to 1) of live messages after the one queued behind them (when one is).
   * Default 0.
   */
  public FaultKnobs reorderFraction(double fraction) {
    this.reorderFraction = checkFraction(fraction, "reorderFraction");
    return this;
  }

  /** Holds every live message this long before sending it. Default zero. */
  public FaultKnobs delay(Duration delay) {
    Objects.requireNonNull(delay, "delay");
    if (delay.isNegative()) {
      throw new IllegalArgumentException("delay must not be negative, got " + delay);
    }
    this.delay = delay;
    return this;
  }

  /** While true, live messages are discarded (the publisher went quiet). Default false. */
  public FaultKnobs silenced(boolean silenced) {
    this.silenced = silenced;
    return this;
  }

  /**
   * While true, the engine evicts blocks (GPU and CPU tier) without publishing their BlockRemoved,
   * as some offload connectors do: the index keeps listing blocks the engine no longer holds, live
   * and in the replay ring alike. Default false.
   */
  public FaultKnobs silentEviction(boolean silent) {
    this.silentEviction = silent;
    return this;
  }

  /** Back to no faults. */
  public FaultKnobs clear() {
    dropFraction = 0;
    duplicateFraction = 0;
    delay = Duration.ZERO;
    silenced = false;
    garbleFraction = 0;
    reorderFraction = 0;
    silentEviction = false;
    return this;
  }

  public double dropFraction() {
    return dropFraction;
  }

  public double duplicateFraction() {
    return duplicateFraction;
  }

  public Duration delay() {
    return delay;
  }

  public double garbleFraction() {
    return garbleFraction;
  }

  public double reorderFraction() {
    return reorderFraction;
  }

  public boolean silenced() {
    return silenced;
  }

  public boolean silentEviction() {
    return silentEviction;
  }

  private static double checkFraction(double fraction, String name) {
    if (!(fraction >= 0 && fraction <= 1)) {
      throw new IllegalArgumentException(name + " must be within [0, 1], got " + fraction);
    }
    return fraction;
  }
}
