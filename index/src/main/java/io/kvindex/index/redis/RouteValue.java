package io.kvindex.index.redis;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * A speculative route field's value in a group's routes hash: the latest {@link Route} of each of
 * the field's last pods, newest first, each the pod's digest (8 bytes big-endian), the route's
 * deadline (ms, Redis's clock, {@value #DEADLINE_BYTES} bytes big-endian), the route's blocks in
 * the field's segment or span (2 bytes big-endian), then the keys of every {@value #KEY_EVERY}th of
 * those blocks and of the last (8 bytes each). speculate.lua writes it with the Lua library {@code
 * route_value.lua}; this is its one Java definition (StoredValueFormatsTest holds the two to the
 * same bytes). The static methods read a value in place, as the lookup path does ({@link
 * SpeculativeRoutes}), and build the part of a route a speculate call gives the script ({@link
 * #blocksAndKeys}); the record is for tools and tests. Immutable; thread-safe.
 *
 * @param routes the value's routes, in its order
 */
public record RouteValue(List<Route> routes) {
  /** Bytes of a route before its keys: pod digest, deadline, blocks. */
  static final int ROUTE_HEADER = 16;

  /** Bytes of a route's deadline. */
  static final int DEADLINE_BYTES = 6;

  /** A route keeps the key of every this many of its blocks, and of its last. */
  static final int KEY_EVERY = RedisSpeculation.KEY_EVERY;

  /**
   * One pod's route.
   *
   * @param podDigest the pod's digest ({@code KeySchema.podDigest} of its pod field)
   * @param deadlineMs until when the route counts (ms, Redis's clock)
   * @param blocks the route's blocks in the field's segment or span
   * @param keys the keys kept: of every {@value #KEY_EVERY}th of those blocks and of the last
   */
  public record Route(long podDigest, long deadlineMs, int blocks, List<Long> keys) {
    public Route {
      keys = List.copyOf(keys);
    }
  }

  public RouteValue {
    routes = List.copyOf(routes);
  }

  /** The value's bytes. */
  public byte[] encode() {
    int size = 0;
    for (Route r : routes) {
      size += ROUTE_HEADER + 8 * r.keys().size();
    }
    ByteBuffer out = ByteBuffer.allocate(size);
    for (Route r : routes) {
      out.putLong(r.podDigest());
      for (int k = DEADLINE_BYTES - 1; k >= 0; k--) {
        out.put((byte) (r.deadlineMs() >>> (8 * k)));
      }
      out.putShort((short) r.blocks());
      r.keys().forEach(out::putLong);
    }
    return out.array();
  }

  /**
   * The value in {@code value}, or null for none.
   *
   * @throws IllegalStateException if the value is cut short
   */
  public static RouteValue decode(byte[] value) {
    if (value == null) {
      return null;
    }
    List<Route> routes = new ArrayList<>();
    for (int at = 0; at < value.length; at = next(value, at)) {
      if (at + ROUTE_HEADER > value.length || next(value, at) > value.length) {
        throw new IllegalStateException(
            "a speculative route value is cut short at byte " + at + " of " + value.length);
      }
      int blocks = blocksAt(value, at);
      List<Long> keys = new ArrayList<>();
      for (int i = 0; i < keysKept(blocks); i++) {
        keys.add(keyAt(value, at, i));
      }
      routes.add(new Route(podDigestAt(value, at), deadlineAt(value, at), blocks, keys));
    }
    return new RouteValue(routes);
  }

  /**
   * What a speculate call gives the script of a route over {@code keys[from, to)} in their segment
   * or span: their count (2 bytes), then the keys of every {@value #KEY_EVERY}th and of the last.
   */
  static byte[] blocksAndKeys(long[] keys, int from, int to) {
    int blocks = to - from;
    int kept = keysKept(blocks);
    ByteBuffer out = ByteBuffer.allocate(2 + 8 * kept).putShort((short) blocks);
    for (int i = 0; i < kept; i++) {
      out.putLong(keys[from + keptBlock(blocks, i)]);
    }
    return out.array();
  }

  /** How many keys a route of {@code blocks} blocks keeps. */
  static int keysKept(int blocks) {
    return (blocks + KEY_EVERY - 1) / KEY_EVERY;
  }

  /** The block (from the segment's or span's first) whose key a route keeps {@code i}th. */
  static int keptBlock(int blocks, int i) {
    return Math.min((i + 1) * KEY_EVERY, blocks) - 1;
  }

  /** Where the route after the one at byte {@code at} starts. */
  static int next(byte[] value, int at) {
    return at + ROUTE_HEADER + 8 * keysKept(blocksAt(value, at));
  }

  /** The pod digest of the route at byte {@code at}. */
  static long podDigestAt(byte[] value, int at) {
    return Bytes.longAt(value, at);
  }

  /** The deadline (ms) of the route at byte {@code at}. */
  static long deadlineAt(byte[] value, int at) {
    long v = 0;
    for (int i = 8; i < 8 + DEADLINE_BYTES; i++) {
      v = (v << 8) | (value[at + i] & 0xff);
    }
    return v;
  }

  /** The blocks of the route at byte {@code at}. */
  static int blocksAt(byte[] value, int at) {
    return ((value[at + 14] & 0xff) << 8) | (value[at + 15] & 0xff);
  }

  /** The {@code i}th key kept by the route at byte {@code at}. */
  static long keyAt(byte[] value, int at, int i) {
    return Bytes.longAt(value, at + ROUTE_HEADER + 8 * i);
  }
}
