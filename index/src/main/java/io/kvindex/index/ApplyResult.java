package io.kvindex.index;

import io.kvindex.common.Check;

/**
 * The outcome of {@link PrefixIndex#apply}. Immutable and thread-safe.
 *
 * @param status what became of the batch
 * @param watermark the stream's last applied sequence number after the call, or -1 when it has none
 *     (or the status is FENCED or SWALLOWED)
 * @param blocksStored block hashes of BlockStored events that were applied
 * @param blocksRemoved block hashes of BlockRemoved events that were applied
 * @param blocksDropped blocks not applied: token mode with an unknown parent or an unknown removed
 *     hash, or a BlockStored whose token count does not match its blocks
 */
public record ApplyResult(
    ApplyStatus status, long watermark, int blocksStored, int blocksRemoved, int blocksDropped) {

  public ApplyResult {
    Check.notNull(status, "status");
  }

  /** A result with no block counts (anything but APPLIED). */
  public static ApplyResult of(ApplyStatus status, long watermark) {
    return new ApplyResult(status, watermark, 0, 0, 0);
  }
}
