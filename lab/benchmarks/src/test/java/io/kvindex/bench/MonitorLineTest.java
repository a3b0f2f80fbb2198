package io.kvindex.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** MONITOR lines parse back into the exact bytes a client sent. */
class MonitorLineTest {
  @Test
  void parse_escapes_giveTheBytesBack() {
    String line =
        "1700000000.123456 [0 127.0.0.1:5000] \"HMGET\" \"k\\\"\\\\\" \"\\x00\\xff\\n\\r\\t\\a\\b ok\"";

    MonitorLine parsed = MonitorLine.parse(line).orElseThrow();

    assertThat(parsed.client()).isEqualTo("127.0.0.1:5000");
    assertThat(parsed.command()).isEqualTo("HMGET");
    assertThat(parsed.args().get(1)).isEqualTo("k\"\\".getBytes(StandardCharsets.US_ASCII));
    assertThat(parsed.args().get(2))
        .isEqualTo(new byte[] {0, (byte) 0xff, '\n', '\r', '\t', 7, '\b', ' ', 'o', 'k'});
  }

  @Test
  void parse_scriptCommandAndOk_areToldApart() {
    assertThat(MonitorLine.parse("1700000000.1 [0 lua] \"TIME\"").orElseThrow().client())
        .isEqualTo("lua");
    assertThat(MonitorLine.parse("OK")).isEmpty();
  }
}
