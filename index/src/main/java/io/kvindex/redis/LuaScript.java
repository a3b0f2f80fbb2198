package io.kvindex.redis;

import io.kvindex.common.Check;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;

/**
 * A Lua script with a constant text and its SHA1, computed locally (the same digest SCRIPT LOAD
 * returns), so EVALSHA needs no round trip to learn it. Scripts are constants: generating script
 * text at run time would fill the server's script cache.
 *
 * <p>A script whose first line is {@code #!lua flags=no-writes} (among other flags) is {@linkplain
 * #readOnly() read-only} and runs with EVALSHA_RO / EVAL_RO, which declare its keys read-only: a
 * Redis user with read access to them ({@code %R~}) may run it, where EVALSHA counts every key as
 * read and written. Immutable, thread-safe.
 */
public final class LuaScript {

  private final String name;
  private final String source;
  private final String sha1;
  private final boolean readOnly;

  private LuaScript(String name, String source) {
    this.name = Check.notBlank(name, "name");
    this.source = Check.notBlank(source, "source");
    this.sha1 = sha1Hex(source);
    this.readOnly = declaresNoWrites(source);
  }

  private static boolean declaresNoWrites(String source) {
    if (!source.startsWith("#!lua")) {
      return false;
    }
    int eol = source.indexOf('\n');
    String shebang = eol < 0 ? source : source.substring(0, eol);
    for (String word : shebang.trim().split("\\s+")) {
      if (word.startsWith("flags=")
          && List.of(word.substring(6).split(",")).contains("no-writes")) {
        return true;
      }
    }
    return false;
  }

  /**
   * A script from its text.
   *
   * @param name a short, fixed name for logs and metric tags ({@code "apply"})
   * @param source the Lua text
   */
  public static LuaScript of(String name, String source) {
    return new LuaScript(name, source);
  }

  /** The short name used in logs and metrics. */
  public String name() {
    return name;
  }

  /** The Lua text. */
  public String source() {
    return source;
  }

  /** Whether the script declares {@code flags=no-writes} and so runs with EVALSHA_RO. */
  public boolean readOnly() {
    return readOnly;
  }

  /** The lower-case hex SHA1 of the UTF-8 text, as EVALSHA wants it. */
  public String sha1() {
    return sha1;
  }

  @Override
  public String toString() {
    return name + "@" + sha1.substring(0, 12);
  }

  private static String sha1Hex(String source) {
    try {
      byte[] digest =
          MessageDigest.getInstance("SHA-1").digest(source.getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(digest);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-1", e);
    }
  }
}
