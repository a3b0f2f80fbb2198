package io.kvindex.localredis;

/** The pause between two checks of a condition polled against a deadline. Thread-safe. */
final class Polling {
  private Polling() {}

  static void pause() {
    try {
      Thread.sleep(10);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new LocalRedisException("interrupted while waiting for redis-server", e);
    }
  }
}
