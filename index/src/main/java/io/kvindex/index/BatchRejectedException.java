package io.kvindex.index;

/**
 * A batch the index can never apply, however often it is retried: a field outside what the index
 * stores (a cache group over 65535, a negative token id, a sequence number past 2^53), or every
 * holder slot of the stream's index group taken. Nothing of the batch was written. A writer rejects
 * such a batch once and goes on after it (the ingester purges the stream, whose index state can no
 * longer be trusted). Immutable, thread-safe.
 */
public final class BatchRejectedException extends IllegalArgumentException {
  private final String reason;

  public BatchRejectedException(String reason, String message, Throwable cause) {
    super(message, cause);
    this.reason = reason;
  }

  /**
   * Why, as a metric tag: {@code invalid} (a field out of range) or {@code slots_full} (the group's
   * holder slots are all taken or await garbage collection).
   */
  public String reason() {
    return reason;
  }
}
