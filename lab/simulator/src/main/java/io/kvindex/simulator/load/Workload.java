package io.kvindex.simulator.load;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Iterator;

/**
 * A stream of requests in arrival order, for {@link LoadRunner}. Not thread-safe: one consumer.
 * Close it to release a trace file.
 */
public interface Workload extends Iterator<TimedRequest>, AutoCloseable {

  /**
   * Reads a Mooncake-format trace (JSON lines with {@code timestamp} in ms, {@code input_length},
   * {@code output_length} and {@code hash_ids}); each hash id stands for {@code blockTokens} tokens
   * derived from the id, so equal ids give equal tokens and shared prefixes hash alike.
   *
   * @param blockTokens tokens per trace hash id (512 for Mooncake's traces)
   * @throws IOException if the file cannot be opened
   */
  static Workload mooncakeTrace(Path file, int blockTokens) throws IOException {
    return MooncakeTrace.open(file, blockTokens);
  }

  /** A seeded synthetic multi-tenant chat workload. */
  static Workload synthetic(SyntheticWorkload.Options options) {
    return new SyntheticWorkload(options);
  }

  @Override
  default void close() {}
}
