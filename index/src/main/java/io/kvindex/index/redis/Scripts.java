package io.kvindex.index.redis;

import io.kvindex.redis.LuaScript;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The index's Lua scripts, each loaded from its resource with the libraries it names prepended. A
 * script names them in its header ({@code -- LIBRARIES: pod_record, lib}); a library names those it
 * uses the same way, and each comes after the libraries it uses, once. The libraries: one per
 * stored value the scripts read or write ({@code block_value.lua}, {@code segment_value.lua},
 * {@code slot_counts.lua}, {@code pod_record.lua}, {@code stream_record.lua}, {@code
 * route_value.lua}: each value's one Lua definition, as {@link BlockValue}, {@link SegmentValue},
 * {@link SlotCounts}, {@link PodRecord}, {@link StreamRecord} and {@link RouteValue} are its Java
 * one), the node history and the reset on a new one ({@code node.lua}), and the helpers many
 * scripts share ({@code lib.lua}). Redis runs a script's whole text on each call, every library
 * function definition included, so a script gets only what it names ({@code ScriptLibrariesTest}
 * checks that it names what it calls, and nothing it does not). A script's {@code #!lua} line stays
 * its first. Thread-safe (constants).
 */
final class Scripts {
  /** Every script below, as loaded (declared first: the constants add to it as they load). */
  private static final List<LuaScript> LOADED = new ArrayList<>();

  /** A script's or library's header line naming the libraries it uses. */
  private static final Pattern LIBRARIES = Pattern.compile("(?m)^-- LIBRARIES: (.*)$");

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

  /**
   * A script's text with the libraries it names prepended, each after those it uses (after its
   * {@code #!lua} line, if any).
   */
  static String withLibraries(String body) {
    StringBuilder libraries = new StringBuilder();
    for (String library : librariesOf(body)) {
      libraries.append(text(library + ".lua"));
    }
    if (body.startsWith("#!")) {
      int eol = body.indexOf('\n') + 1;
      return body.substring(0, eol) + libraries + body.substring(eol);
    }
    return libraries + body;
  }

  /**
   * The libraries a script gets, in the order they are prepended: those its LIBRARIES line names
   * and those they name in turn, each after the ones it uses.
   */
  static List<String> librariesOf(String body) {
    Set<String> out = new LinkedHashSet<>();
    named(body).forEach(l -> addWithUsed(l, out, new ArrayDeque<>()));
    return List.copyOf(out);
  }

  /** The libraries a script's or library's LIBRARIES line names, as written. */
  static List<String> named(String text) {
    Matcher m = LIBRARIES.matcher(text);
    if (!m.find()) {
      return List.of();
    }
    List<String> out = new ArrayList<>();
    for (String name : m.group(1).split(",")) {
      out.add(name.trim());
    }
    return out;
  }

  private static void addWithUsed(String library, Set<String> out, Deque<String> using) {
    if (out.contains(library)) {
      return;
    }
    if (using.contains(library)) {
      throw new IllegalStateException(
          "the Lua libraries use each other in a circle: "
              + String.join(" -> ", using)
              + " -> "
              + library
              + "; move what both need into a library of its own");
    }
    using.addLast(library);
    named(text(library + ".lua")).forEach(l -> addWithUsed(l, out, using));
    using.removeLast();
    out.add(library);
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
