package io.kvindex.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class LuaScriptTest {

  @Test
  void sha1_matchesRedisDigest() {
    // SHA1 of "return 1", as SCRIPT LOAD reports it
    assertThat(LuaScript.of("one", "return 1").sha1())
        .isEqualTo("e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
  }

  @Test
  void of_rejectsBlankSource() {
    assertThatThrownBy(() -> LuaScript.of("x", " "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("source");
  }
}
