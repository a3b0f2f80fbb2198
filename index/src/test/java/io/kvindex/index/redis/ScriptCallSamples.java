package io.kvindex.index.redis;

import java.util.List;

/** One call of every script whose call this package builds, with sample values. */
final class ScriptCallSamples {
  private ScriptCallSamples() {}

  static List<ScriptCall.Source> all() {
    return List.of(new InitCall(1, 3, "epoch", RedisPrefixIndex.FORMAT), new IdentityCall(2));
  }
}
