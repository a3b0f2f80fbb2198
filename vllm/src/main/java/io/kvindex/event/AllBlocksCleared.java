package io.kvindex.event;

/** The engine dropped its whole prefix cache (reset, sleep). Carries no fields on the wire. */
public record AllBlocksCleared() implements KvEvent {
  /** The only instance anyone needs. */
  public static final AllBlocksCleared INSTANCE = new AllBlocksCleared();
}
