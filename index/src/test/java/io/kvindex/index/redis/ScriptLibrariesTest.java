package io.kvindex.index.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.redis.LuaScript;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Each script and library names in its {@code -- LIBRARIES:} line exactly the libraries whose
 * functions and constants it calls, read statically from the Lua text: a script that calls a
 * library function it does not get fails here rather than at its first call in Redis (where the
 * name is a nil global), and one that names a library it never uses pays for it on every call. A
 * library's exports are its top-level {@code local function}s and {@code UPPER_CASE} constants; its
 * lower-case locals (such as {@code local byte = string.byte}) are its own.
 */
class ScriptLibrariesTest {
  private static final Pattern FUNCTION = Pattern.compile("(?m)^local function ([A-Za-z_]\\w*)");
  private static final Pattern CONSTANT = Pattern.compile("(?m)^local ([A-Z][A-Z0-9_]*) =");
  private static final Pattern OWN_LOCAL =
      Pattern.compile("(?m)^\\s*local (?:function )?([A-Za-z_]\\w*(?:\\s*,\\s*[A-Za-z_]\\w*)*)");
  private static final Pattern NAME = Pattern.compile("(?<![.:\\w])([A-Za-z_]\\w*)");

  @Test
  void everyScriptAndLibrary_namesExactlyTheLibrariesItCalls() {
    Map<String, Set<String>> exports = exports();
    List<String> wrong = new ArrayList<>();
    for (String file : luaFiles()) {
      wrong.addAll(mismatches(file, resource(file + ".lua"), exports));
    }
    assertThat(wrong).isEmpty();
  }

  @Test
  void everyLibraryName_isExportedByOneLibrary() {
    Map<String, String> owner = new TreeMap<>();
    List<String> twice = new ArrayList<>();
    exports()
        .forEach(
            (library, names) ->
                names.forEach(
                    n -> {
                      String before = owner.putIfAbsent(n, library);
                      if (before != null) {
                        twice.add(n + " in " + before + " and " + library);
                      }
                    }));
    assertThat(twice).isEmpty();
  }

  @Test
  void everyLoadedScript_getsItsLibrariesBeforeIt_eachOnceAfterThoseItUses() {
    for (LuaScript script : Scripts.all()) {
      List<String> got = Scripts.librariesOf(resource(script.name() + ".lua"));
      assertThat(new HashSet<>(got)).hasSameSizeAs(got);
      for (int i = 0; i < got.size(); i++) {
        for (String used : Scripts.named(resource(got.get(i) + ".lua"))) {
          assertThat(got.subList(0, i)).as(script.name() + ": " + got.get(i)).contains(used);
        }
      }
      assertThat(Scripts.withLibraries(resource(script.name() + ".lua")))
          .isEqualTo(script.source());
    }
    assertThat(Scripts.librariesOf(resource("apply.lua")))
        .containsExactly(
            "block_value",
            "segment_value",
            "slot_counts",
            "pod_record",
            "stream_record",
            "lib",
            "node");
    assertThat(Scripts.librariesOf(resource("speculate.lua")))
        .containsExactly("pod_record", "route_value", "lib");
    assertThat(Scripts.librariesOf(resource("read.lua"))).isEmpty();
  }

  /** The check itself: a call without its library, and a library never called, are reported. */
  @Test
  void mismatches_missingAndUnusedLibraries_reported() {
    Map<String, Set<String>> exports = exports();
    assertThat(
            mismatches(
                "sample",
                "-- LIBRARIES: route_value\nlocal now = nowMs()\nreturn string.byte('x')\n",
                exports))
        .containsExactly(
            "sample calls lib (nowMs) but does not name it",
            "sample names route_value but calls nothing of it");
    assertThat(mismatches("sample", "-- nowMs() in a comment\nreturn 'nowMs()'\n", exports))
        .isEmpty();
    assertThat(
            mismatches("sample", "local function nowMs() return 1 end\nreturn nowMs()\n", exports))
        .isEmpty();
    assertThatThrownBy(() -> Scripts.librariesOf("-- LIBRARIES: no_such_library\n"))
        .hasMessageContaining("no_such_library.lua is missing");
  }

  /** What a file's LIBRARIES line gets wrong, one line each. */
  private static List<String> mismatches(
      String file, String text, Map<String, Set<String>> exports) {
    Set<String> used = used(text);
    Set<String> calls = new TreeSet<>();
    List<String> out = new ArrayList<>();
    exports.forEach(
        (library, names) -> {
          Set<String> hit = new TreeSet<>(names);
          hit.retainAll(used);
          if (!library.equals(file) && !hit.isEmpty()) {
            calls.add(library);
            if (!Scripts.named(text).contains(library)) {
              out.add(
                  file
                      + " calls "
                      + library
                      + " ("
                      + String.join(", ", hit)
                      + ") but does not name it");
            }
          }
        });
    for (String named : Scripts.named(text)) {
      if (!calls.contains(named)) {
        out.add(file + " names " + named + " but calls nothing of it");
      }
    }
    return out;
  }

  /** The names a Lua text uses and does not declare itself, outside comments and strings. */
  private static Set<String> used(String text) {
    String code =
        text.replaceAll("--[^\n]*", "")
            .replaceAll("'(?:\\\\.|[^'\\\\\n])*'", "''")
            .replaceAll("\"(?:\\\\.|[^\"\\\\\n])*\"", "\"\"");
    Set<String> out = new HashSet<>();
    for (Matcher m = NAME.matcher(code); m.find(); ) {
      out.add(m.group(1));
    }
    for (Matcher m = OWN_LOCAL.matcher(code); m.find(); ) {
      for (String own : m.group(1).split(",")) {
        out.remove(own.trim());
      }
    }
    return out;
  }

  /** Each library (a Lua resource that is no script) → its exported names. */
  private static Map<String, Set<String>> exports() {
    Set<String> scripts = new HashSet<>();
    Scripts.all().forEach(s -> scripts.add(s.name()));
    Map<String, Set<String>> out = new TreeMap<>();
    for (String file : luaFiles()) {
      if (scripts.contains(file)) {
        continue;
      }
      String text = resource(file + ".lua");
      Set<String> names = new TreeSet<>();
      for (Pattern p : List.of(FUNCTION, CONSTANT)) {
        for (Matcher m = p.matcher(text); m.find(); ) {
          names.add(m.group(1));
        }
      }
      out.put(file, names);
    }
    assertThat(out).containsKeys("block_value", "pod_record", "lib", "node");
    return out;
  }

  /** Every Lua resource beside Scripts, by name without ".lua". */
  private static List<String> luaFiles() {
    try (Stream<Path> files =
        Files.list(Path.of(Scripts.class.getResource("lib.lua").toURI()).getParent())) {
      return files
          .map(p -> p.getFileName().toString())
          .filter(n -> n.endsWith(".lua"))
          .map(n -> n.substring(0, n.length() - 4))
          .sorted()
          .toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String resource(String name) {
    try (InputStream in = Scripts.class.getResourceAsStream(name)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
