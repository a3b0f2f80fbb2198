package io.kvindex.index;

/** The contract against the in-memory model itself. */
class InMemoryPrefixIndexTest extends PrefixIndexContract {
  @Override
  PrefixIndexBuilder builder() {
    return PrefixIndex.builder();
  }

  @Override
  PrefixIndex open(PrefixIndexBuilder builder) {
    return InMemoryPrefixIndex.of(builder);
  }
}
