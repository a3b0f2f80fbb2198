package io.kvindex.wire;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;

/**
 * A replay request as a ROUTER receives it (for a simulated publisher): who asked and the first
 * sequence number wanted. Immutable; the identity array is not copied and must not be modified.
 *
 * @param identity the ROUTER's routing identity of the requesting peer
 * @param startSeq the first sequence number to replay
 */
public record ReplayRequest(byte[] identity, long startSeq) {

  public ReplayRequest {
    Objects.requireNonNull(identity, "identity");
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ReplayRequest r
        && startSeq == r.startSeq
        && Arrays.equals(identity, r.identity);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(identity) * 31 + Long.hashCode(startSeq);
  }

  @Override
  public String toString() {
    return "ReplayRequest[identity="
        + HexFormat.of().formatHex(identity)
        + ", startSeq="
        + startSeq
        + "]";
  }
}
