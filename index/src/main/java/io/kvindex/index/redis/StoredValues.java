package io.kvindex.index.redis;

import io.kvindex.redis.LuaScript;
import java.util.HashMap;
import java.util.Map;

/**
 * Decoders of the stored values that tools reading the index need beside {@link KeySchema}'s key
 * layout and the value types ({@link PodRecord}, {@link StreamRecord}), and the scripts by the SHA1
 * {@code EVALSHA} names them with. Thread-safe (stateless).
 */
public final class StoredValues {
  private StoredValues() {}

  /** A decimal value (0 for none), as the counts hash and the inferred-capacity mark hold them. */
  public static long decimal(byte[] value) {
    return Bytes.decimal(value);
  }

  /**
   * The index's Lua scripts by the SHA1 that {@code EVALSHA} names them with: script name by SHA1,
   * for tools that read Redis's {@code SLOWLOG}.
   */
  public static Map<String, String> scriptNamesBySha() {
    Map<String, String> out = new HashMap<>();
    for (LuaScript s : Scripts.all()) {
      out.put(s.sha1(), s.name());
    }
    return Map.copyOf(out);
  }
}
