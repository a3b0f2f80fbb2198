package io.kvindex.index;

import io.kvindex.common.Check;

/**
 * A stream's lease as its holder knows it: the fencing token the index handed out and the owner it
 * was handed to. Every write names the whole lease, and the index compares both, so an old owner
 * and a new one can never both pass, even if a lost write or a flushed index hands out the same
 * token twice. Immutable and thread-safe.
 *
 * @param token the fencing token
 * @param owner the owner's name (unique to one process incarnation)
 */
public record Lease(long token, String owner) {
  public Lease {
    Check.atLeast(token, 1, "token");
    Check.name(owner, "owner");
  }

  @Override
  public String toString() {
    return token + ":" + owner;
  }
}
