package io.kvindex.redis;

import io.kvindex.common.Check;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * A Lua script with a constant text and its SHA1, computed locally (the same digest SCRIPT LOAD
 * returns), so EVALSHA needs no round trip to learn it. Scripts are constants: generating script
 * text at run time would fill the server's script cache. Immutable, thread-safe.
 */
public final class LuaScript {

  private final String name;
  private final String source;
  private final String sha1;

  private LuaScript(String name, String source) {
    this.name = Check.notBlank(name, "name");
    this.source = Check.notBlank(source, "source");
    this.sha1 = sha1Hex(source);
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

  /**
   * A script from a UTF-8 classpath resource, resolved like {@link Class#getResourceAsStream}.
   *
   * @throws IllegalArgumentException if the resource does not exist
   */
  public static LuaScript fromResource(String name, Class<?> anchor, String resource) {
    Check.notNull(anchor, "anchor");
    Check.notBlank(resource, "resource");
    try (InputStream in = anchor.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalArgumentException(
            "no Lua script resource '" + resource + "' next to " + anchor.getName());
      }
      return new LuaScript(name, new String(in.readAllBytes(), StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read Lua script resource '" + resource + "'", e);
    }
  }

  /** The short name used in logs and metrics. */
  public String name() {
    return name;
  }

  /** The Lua text. */
  public String source() {
    return source;
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
