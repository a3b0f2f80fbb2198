package io.kvindex.index.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.StreamId;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The key layout is described once, in docs/key-layout.md, and that description is held to {@link
 * KeySchema}: every key the schema builds is listed under its tag (an index group's, or the replica
 * registry's), none is listed that it does not build, the keys it builds in group 0 whatever the
 * stream are the ones marked "group 0 only", and every fixed field name it declares is listed, as
 * is every {@code kvindex/} field the page names found in the schema or the scripts.
 */
class KeyLayoutDocTest {
  private static final Path PAGE = Path.of("..", "docs", "key-layout.md");
  private static final Path SCRIPTS =
      Path.of("src", "main", "resources", "io", "kvindex", "index", "redis");
  private static final String INDEX = "idx";
  private static final int GROUPS = 3;
  private static final Pattern KEY = Pattern.compile("kvindex:v1:\\{" + INDEX + "/([^}]+)\\}:(.*)");
  private static final Pattern FIRST_CODE_CELL = Pattern.compile("^\\| `([^`]+)` \\|");

  private static String page;

  @BeforeAll
  static void read() throws IOException {
    page = Files.readString(PAGE);
  }

  /** The page's table rows under a {@code ## } heading: key name → the row. */
  private static Map<String, String> rows(String heading) {
    Map<String, String> rows = new TreeMap<>();
    boolean inSection = false;
    for (String line : page.split("\n")) {
      if (line.startsWith("## ")) {
        inSection = line.equals("## " + heading);
      } else if (inSection) {
        Matcher m = FIRST_CODE_CELL.matcher(line);
        if (m.find()) {
          rows.put(m.group(1), line);
        }
      }
    }
    assertThat(rows).as("key rows under '## %s' in %s", heading, PAGE).isNotEmpty();
    return rows;
  }

  /** A stream outside group 0, so that a key built in group 0 shows it ignores the stream. */
  private static StreamId streamOutsideGroupZero(KeySchema keys) {
    for (int i = 0; ; i++) {
      StreamId stream = new StreamId("m", "pod-" + i, 1);
      if (keys.groupOf(stream.model(), stream.pod()) != 0) {
        return stream;
      }
    }
  }

  /** Every key KeySchema builds, by its tag ("ingesters", or the group), as the page names it. */
  private static Map<String, Set<String>> schemaKeys() throws ReflectiveOperationException {
    KeySchema keys = new KeySchema(INDEX, GROUPS);
    StreamId stream = streamOutsideGroupZero(keys);
    int group = keys.groupOf(stream.model(), stream.pod());
    byte[] streamField = HashFields.streamField(stream);
    HexFormat hex = HexFormat.of();
    String streamDigest = KeySchema.streamDigest(stream);
    String podDigest =
        hex.formatHex(KeySchema.sha256(HashFields.podField(stream.model(), stream.pod())), 0, 16);
    Map<String, Set<String>> byTag = new TreeMap<>();
    for (Method method : KeySchema.class.getDeclaredMethods()) {
      if (Modifier.isStatic(method.getModifiers())
          || Modifier.isPrivate(method.getModifiers())
          || method.getReturnType() != byte[].class
          || method.getName().equals("key")) {
        continue;
      }
      List<Object> args = new ArrayList<>();
      for (Class<?> type : method.getParameterTypes()) {
        if (type == int.class) {
          args.add(group);
        } else if (type == StreamId.class) {
          args.add(stream);
        } else if (type == byte[].class) {
          args.add(streamField);
        } else if (type == String.class) {
          args.add(args.isEmpty() ? stream.model() : stream.pod());
        } else {
          throw new AssertionError("KeySchema." + method.getName() + " takes a " + type);
        }
      }
      method.setAccessible(true);
      byte[] key;
      try {
        key = (byte[]) method.invoke(keys, args.toArray());
      } catch (InvocationTargetException e) {
        throw new AssertionError("KeySchema." + method.getName() + " failed", e.getCause());
      }
      Matcher m = KEY.matcher(new String(key, StandardCharsets.UTF_8));
      assertThat(m.matches()).as("KeySchema.%s builds %s", method.getName(), m).isTrue();
      String tag = m.group(1).startsWith("load-") ? "load" : m.group(1);
      String name = m.group(2).replace(streamDigest, "<d>").replace(podDigest, "<p>");
      if (!tag.equals("ingesters") && !tag.equals("load")) {
        assertThat(Set.of("0", Integer.toString(group)))
            .as("KeySchema.%s's group", method.getName())
            .contains(tag);
      }
      byTag.computeIfAbsent(tag, t -> new TreeSet<>()).add(name);
    }
    return byTag;
  }

  @Test
  void groupKeys_areTheSchemas() throws ReflectiveOperationException {
    Map<String, Set<String>> schema = schemaKeys();
    Set<String> inGroups = new TreeSet<>();
    schema.forEach(
        (tag, names) -> {
          if (!tag.equals("ingesters") && !tag.equals("load")) {
            inGroups.addAll(names);
          }
        });
    assertThat(rows("Keys of an index group").keySet())
        .as("keys of an index group in %s against KeySchema", PAGE)
        .isEqualTo(inGroups);
  }

  @Test
  void groupZeroKeys_areMarkedGroupZeroOnly() throws ReflectiveOperationException {
    Set<String> groupZero = schemaKeys().getOrDefault("0", Set.of());
    Set<String> marked = new TreeSet<>();
    rows("Keys of an index group")
        .forEach(
            (name, row) -> {
              if (row.contains("group 0 only")) {
                marked.add(name);
              }
            });
    assertThat(marked).as("keys marked 'group 0 only' in %s", PAGE).isEqualTo(groupZero);
  }

  @Test
  void registryKeys_areTheSchemas() throws ReflectiveOperationException {
    assertThat(rows("Keys of the replica registry").keySet())
        .as("keys of the replica registry in %s against KeySchema", PAGE)
        .isEqualTo(schemaKeys().get("ingesters"));
  }

  @Test
  void sharedLoadKeys_areTheSchemas() throws ReflectiveOperationException {
    assertThat(rows("Keys of the shared load view").keySet())
        .as("keys of the shared load view in %s against KeySchema", PAGE)
        .isEqualTo(schemaKeys().get("load"));
  }

  @Test
  void keyForm_isTheSchemas() {
    String flat = page.replaceAll("\\s+", " ");
    assertThat(KeySchema.keyPrefix(INDEX)).isEqualTo("kvindex:v1:{" + INDEX + "/");
    assertThat(flat).contains("`kvindex:v1:{<index>/<group>}:<name>`");
    assertThat(flat).contains("**block field** (" + KeySchema.BLOCK_FIELD_BYTES + " bytes)");
    assertThat(flat).contains("**segment field** (" + KeySchema.SEGMENT_FIELD_BYTES + " bytes)");
    assertThat(flat)
        .contains("A segment covers " + KeySchema.SEGMENT_BLOCKS + " blocks")
        .contains("below position " + KeySchema.SPAN_FROM)
        .contains("a span " + KeySchema.SPAN_BLOCKS + " blocks");
  }

  /** KeySchema's fixed field names (its static byte[] constants) are each on the page. */
  @Test
  void fixedFields_ofTheSchemaAreListed() throws IllegalAccessException {
    List<String> missing = new ArrayList<>();
    for (var field : KeySchema.class.getDeclaredFields()) {
      if (Modifier.isStatic(field.getModifiers()) && field.getType() == byte[].class) {
        field.setAccessible(true);
        String name = new String((byte[]) field.get(null), StandardCharsets.US_ASCII);
        if (!page.contains("`" + name + "`")) {
          missing.add(field.getName() + " = " + name);
        }
      }
    }
    assertThat(missing).as("KeySchema's fields missing from %s", PAGE).isEmpty();
  }

  /** Every {@code kvindex/...} field the page names is one the schema or a script writes. */
  @Test
  void listedFields_exist() throws IOException, IllegalAccessException {
    StringBuilder code = new StringBuilder();
    try (Stream<Path> scripts = Files.list(SCRIPTS)) {
      for (Path script : scripts.filter(p -> p.toString().endsWith(".lua")).toList()) {
        code.append(Files.readString(script));
      }
    }
    for (var field : KeySchema.class.getDeclaredFields()) {
      if (Modifier.isStatic(field.getModifiers()) && field.getType() == byte[].class) {
        field.setAccessible(true);
        code.append('\n').append(new String((byte[]) field.get(null), StandardCharsets.US_ASCII));
      }
    }
    Matcher m = Pattern.compile("`(kvindex/[a-z/-]+)`").matcher(page);
    List<String> unknown = new ArrayList<>();
    while (m.find()) {
      if (!code.toString().contains(m.group(1))) {
        unknown.add(m.group(1));
      }
    }
    assertThat(unknown).as("fields %s names that no script or KeySchema has", PAGE).isEmpty();
  }
}
