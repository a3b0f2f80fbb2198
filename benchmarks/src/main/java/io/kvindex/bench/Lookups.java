package io.kvindex.bench;

import io.kvindex.index.LookupRequest;
import io.kvindex.index.PrefixIndex;
import java.util.List;

/**
 * The lookup path the router benchmark measures. Until the router library is on the classpath this
 * is {@link PrefixIndex#lookup} (what the router calls underneath). Thread-safe.
 */
final class Lookups implements AutoCloseable {
  static final String PATH = "PrefixIndex.lookup (router library not yet wired in)";

  private final PrefixIndex index;
  private final List<LookupRequest> requests;

  private Lookups(PrefixIndex index, List<LookupRequest> requests) {
    this.index = index;
    this.requests = requests;
  }

  static Lookups open(String uri, int groups, PrefixIndex index, LookupFixture fixture) {
    return new Lookups(index, RouterBenchmark.requests(fixture));
  }

  /** One lookup of a prompt chosen by thread and iteration; false if the index was unavailable. */
  boolean score(int thread, long iteration) {
    int prompt = (int) ((iteration * 8 + thread) % requests.size());
    return index.lookup(requests.get(prompt)).complete();
  }

  @Override
  public void close() {}
}
