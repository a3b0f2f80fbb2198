package io.kvindex.index.redis;

import io.kvindex.redis.LuaScript;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The index's Lua scripts, each loaded from its resource with the script libraries prepended: one
 * per stored value the scripts read or write ({@code block_value.lua}, {@code segment_value.lua},
 * {@code slot_counts.lua}, {@code pod_record.lua}, {@code stream_record.lua}, {@code
 * route_value.lua}: each value's one Lua definition, as {@link BlockValue}, {@link SegmentValue},
 * {@link SlotCounts}, {@link PodRecord}, {@link StreamRecord} and {@link RouteValue} are its Java
 * one), then the helpers every script shares ({@code lib.lua}), so each exists once. A script's
 * {@code #!lua} line stays its first. Thread-safe (constants).
 */
final class Scripts {
  /** Every script below, as loaded (declared first: the constants add to it as they load). */
  private static final List<LuaScript> LOADED = new ArrayList<>();

  /** The libraries every script is loaded with, in order (a library may use those before it). */
  private static final List<String> LIBRARIES =
      List.of(
          "block_value",
          "segment_value",
          "slot_counts",
          "pod_record",
          "stream_record",
          "route_value",
          "lib");

  static final LuaScript APPLY = load("apply");
  static final LuaScript PURGE = load("purge");
  static final LuaScript PUBLISH = load("publish");
  static final LuaScript STAGED = load("staged");
  static final LuaScript GC = load("gc");
  static final LuaScript LEASE = load("lease");
  static final LuaScript HEARTBEAT = load("heartbeat");
  static final LuaScript READ = load("read");
  static final LuaScript SPECULATE = load("speculate");
  static final LuaScript PODS = load("pods");
  static final LuaScript SWEEP = load("sweep");
  static final LuaScript INIT = load("init");
  static final LuaScript LOOKUP = load("lookup");
  static final LuaScript TIME = load("time");
  static final LuaScript REGISTRY = load("registry");
  static final LuaScript INCARNATION = load("incarnation");
  static final LuaScript IDENTITY = load("identity");
  static final LuaScript RESYNC = load("resync");
  static final LuaScript NOTE = load("note");
  static final LuaScript INFER = load("infer");
  static final LuaScript INFERRED = load("inferred");
  static final LuaScript LAG = load("lag");
  static final LuaScript LAGS = load("lags");

  private Scripts() {}

  /** Every script of the index. */
  static List<LuaScript> all() {
    return List.copyOf(LOADED);
  }

  private static LuaScript load(String name) {
    LuaScript script = LuaScript.of(name, withLibraries(text(name + ".lua")));
    LOADED.add(script);
    return script;
  }

  /** A script's text with the libraries prepended (after its {@code #!lua} line, if any). */
  static String withLibraries(String body) {
    StringBuilder libraries = new StringBuilder();
    LIBRARIES.forEach(l -> libraries.append(text(l + ".lua")));
    if (body.startsWith("#!")) {
      int eol = body.indexOf('\n') + 1;
      return body.substring(0, eol) + libraries + body.substring(eol);
    }
    return libraries + body;
  }

  private static String text(String resource) {
    try (InputStream in = Scripts.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException(
            "the Lua resource " + resource + " is missing from the jar");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the Lua resource " + resource, e);
    }
  }
}
