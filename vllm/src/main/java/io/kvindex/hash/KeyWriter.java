package io.kvindex.hash;

/**
 * Writes the Python value vLLM hashes for a block, {@code (parent, tuple(token_ids), extra_keys)},
 * in one of the serializations its hash functions use (canonical CBOR or pickle protocol 5), into
 * one growable buffer reused between blocks. A tuple is written as {@link #beginTuple}, its items,
 * {@link #endTuple} with the same size; {@link #finish} closes the value. Not thread-safe.
 */
interface KeyWriter {

  /** Starts a new value. */
  void reset();

  void beginTuple(int items);

  void endTuple(int items);

  /** A Python int. */
  void integer(long value);

  /**
   * Writes {@code values[from..to)} as Python ints, the hot path of block hashing.
   *
   * @return -1, or the index of the first negative value (the value is then unusable)
   */
  int tokenIds(int[] values, int from, int to);

  /** A Python str, given as its UTF-8 bytes. */
  void text(byte[] utf8);

  /** A Python bytes object. */
  void bytes(byte[] value);

  void none();

  /** Ends the value; {@link #buffer()} then holds {@link #length()} bytes to hash. */
  void finish();

  byte[] buffer();

  int length();
}
