package io.kvindex.index.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.redis.LuaScript;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every script call's record names its KEYS and ARGV as its script's header does, position by
 * position ({@code -- KEYS: 1 meta, 2 blocks}, {@code -- ARGV (take): 1 op, 2 rank (the dp rank),
 * 3.. fields}): each entry of a header is its position ({@code N..} for a variadic tail), one
 * {@code snake_case} name, and an optional description in parentheses; entries are separated by
 * commas, and a header goes on over the comment lines indented under it.
 */
class ScriptCallHeadersTest {
  private static final KeySchema KEYS = new KeySchema("idx", 3);

  private static final Pattern HEADER = Pattern.compile("^-- (KEYS|ARGV)(?: \\((\\w+)\\))?: (.*)$");
  private static final Pattern CONTINUED = Pattern.compile("^-- {2,}(\\S.*)$");
  private static final Pattern ENTRY =
      Pattern.compile("^(\\d+)(\\.\\.)? ([a-z][a-z0-9_]*)(?: \\(.*\\))?$");

  /** One call of every script, built by its record. */
  static Stream<ScriptCall.Source> calls() {
    return ScriptCallSamples.all().stream();
  }

  @ParameterizedTest
  @MethodSource("calls")
  void call_namesItsArgumentsAsItsScriptsHeader(ScriptCall.Source source) {
    ScriptCall call = source.on(KEYS);
    Map<String, List<Entry>> headers = headers(resource(call.script().name() + ".lua"));
    assertThat(mismatches(call, headers)).isEmpty();
  }

  @Test
  void everyScript_hasACheckedCall() {
    Set<String> called = new TreeSet<>();
    calls().forEach(c -> called.add(c.on(KEYS).script().name()));
    Set<String> scripts = new TreeSet<>();
    for (LuaScript s : Scripts.all()) {
      scripts.add(s.name());
    }
    assertThat(called).isEqualTo(scripts);
  }

  /** The check itself: a header and a call that disagree are reported. */
  @Test
  void mismatches_headerAndCallDisagree_reported() {
    Map<String, List<Entry>> headers =
        headers("-- KEYS: 1 meta, 2 blocks\n-- ARGV: 1 groups (a count), 2 format\n");
    ScriptCall swapped =
        ScriptCall.of(Scripts.INIT)
            .key("meta", new byte[0])
            .key("blocks", new byte[0])
            .arg("format", 5)
            .arg("groups", 3)
            .build();
    assertThat(mismatches(swapped, headers))
        .containsExactly(
            "init ARGV 1: the call passes 'format', the header says 'groups'",
            "init ARGV 2: the call passes 'groups', the header says 'format'");
    ScriptCall missing = ScriptCall.of(Scripts.INIT).key("meta", new byte[0]).build();
    assertThat(mismatches(missing, headers))
        .contains("init KEYS: the call passes 1, the header names 2");
    assertThatThrownBy(() -> headers("-- KEYS: 1 meta, 2 the blocks hash\n"))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("2 the blocks hash");
  }

  private record Entry(int position, boolean variadic, String name) {}

  /** What differs between the call and its script's header, one line each. */
  static List<String> mismatches(ScriptCall call, Map<String, List<Entry>> headers) {
    List<String> out = new ArrayList<>();
    String script = call.script().name();
    compare(script, "KEYS", call.keys(), header(headers, "KEYS", call.op()), out);
    compare(script, "ARGV", call.argv(), header(headers, "ARGV", call.op()), out);
    return out;
  }

  private static List<Entry> header(Map<String, List<Entry>> headers, String what, String op) {
    List<Entry> forOp = op == null ? null : headers.get(what + " (" + op + ")");
    return forOp != null ? forOp : headers.getOrDefault(what, List.of());
  }

  private static void compare(
      String script,
      String what,
      List<ScriptCall.Arg> passed,
      List<Entry> named,
      List<String> out) {
    boolean variadic = !named.isEmpty() && named.get(named.size() - 1).variadic();
    int fixed = variadic ? named.size() - 1 : named.size();
    if (passed.size() < fixed || (!variadic && passed.size() > fixed)) {
      out.add(
          script
              + " "
              + what
              + ": the call passes "
              + passed.size()
              + ", the header names "
              + named.size());
    }
    for (int i = 0; i < passed.size() && (variadic || i < named.size()); i++) {
      Entry entry = named.get(Math.min(i, named.size() - 1));
      if (!entry.name().equals(passed.get(i).name())) {
        out.add(
            script
                + " "
                + what
                + " "
                + (i + 1)
                + ": the call passes '"
                + passed.get(i).name()
                + "', the header says '"
                + entry.name()
                + "'");
      }
    }
  }

  /** A script's headers: "KEYS", "ARGV", "KEYS (op)", "ARGV (op)" → its entries. */
  static Map<String, List<Entry>> headers(String source) {
    Map<String, List<Entry>> out = new LinkedHashMap<>();
    String[] lines = source.split("\n");
    for (int i = 0; i < lines.length; i++) {
      Matcher m = HEADER.matcher(lines[i]);
      if (!m.matches()) {
        continue;
      }
      StringBuilder text = new StringBuilder(m.group(3));
      for (Matcher c; i + 1 < lines.length && (c = CONTINUED.matcher(lines[i + 1])).matches(); ) {
        text.append(' ').append(c.group(1));
        i++;
      }
      String name = m.group(1) + (m.group(2) == null ? "" : " (" + m.group(2) + ")");
      out.put(name, entries(name, text.toString()));
    }
    return out;
  }

  /** Splits at the commas outside parentheses; each part one strict entry. */
  private static List<Entry> entries(String header, String text) {
    List<Entry> out = new ArrayList<>();
    int depth = 0;
    int start = 0;
    for (int i = 0; i <= text.length(); i++) {
      char ch = i < text.length() ? text.charAt(i) : ',';
      depth += ch == '(' ? 1 : ch == ')' ? -1 : 0;
      if (ch == ',' && depth == 0) {
        String part = text.substring(start, i).trim();
        Matcher m = ENTRY.matcher(part);
        if (!m.matches() || Integer.parseInt(m.group(1)) != out.size() + 1) {
          throw new AssertionError(
              header
                  + ": '"
                  + part
                  + "' is not entry "
                  + (out.size() + 1)
                  + " as '<position> <snake_case_name> (<description>)'");
        }
        out.add(new Entry(out.size() + 1, m.group(2) != null, m.group(3)));
        start = i + 1;
      }
    }
    return out;
  }

  private static String resource(String name) {
    try (InputStream in = Scripts.class.getResourceAsStream(name)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
