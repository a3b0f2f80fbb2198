package io.kvindex.wire;

/**
 * A msgpack {@code KVEventBatch} payload could not be decoded. The message names the field (for
 * example {@code events[3].block_hashes[2]}), the byte offset in the payload where the offending
 * value starts, and what was expected there. Immutable.
 */
public final class MalformedEventException extends WireFormatException {
  private final String field;
  private final long offset;

  MalformedEventException(String field, long offset, String problem, Throwable cause) {
    super(field + " at byte " + offset + ": " + problem, cause);
    this.field = field;
    this.offset = offset;
  }

  /** The path of the offending field, for example {@code events[3].block_hashes[2]}. */
  public String field() {
    return field;
  }

  /** Where the offending value starts, in bytes from the start of the payload. */
  public long offset() {
    return offset;
  }
}
