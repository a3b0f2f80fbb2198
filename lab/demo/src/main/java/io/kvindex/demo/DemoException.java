package io.kvindex.demo;

import io.kvindex.common.KvIndexException;

/** The demo could not run to its summary; the message says what was wrong. Immutable. */
public final class DemoException extends KvIndexException {

  DemoException(String message) {
    super(message);
  }
}
