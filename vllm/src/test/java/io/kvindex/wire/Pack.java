package io.kvindex.wire;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/** A terse msgpack builder for hand-made test payloads. */
final class Pack {
  private final MessageBufferPacker out = MessagePack.newDefaultBufferPacker();

  static Pack pack() {
    return new Pack();
  }

  Pack array(int n) {
    return run(() -> out.packArrayHeader(n));
  }

  Pack map(int n) {
    return run(() -> out.packMapHeader(n));
  }

  Pack str(String s) {
    byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
    return run(
        () -> {
          out.packRawStringHeader(utf8.length);
          out.writePayload(utf8);
        });
  }

  Pack integer(long v) {
    return run(() -> out.packLong(v));
  }

  Pack f64(double v) {
    return run(() -> out.packDouble(v));
  }

  Pack f32(float v) {
    return run(() -> out.packFloat(v));
  }

  Pack nil() {
    return run(out::packNil);
  }

  Pack bool(boolean b) {
    return run(() -> out.packBoolean(b));
  }

  Pack bin(byte[] bytes) {
    return run(
        () -> {
          out.packBinaryHeader(bytes.length);
          out.writePayload(bytes);
        });
  }

  /** Raw bytes given as hex. */
  Pack raw(String hex) {
    byte[] bytes = HexFormat.of().parseHex(hex.replace(" ", ""));
    return run(() -> out.writePayload(bytes));
  }

  byte[] bytes() {
    return out.toByteArray();
  }

  private Pack run(IoAction action) {
    try {
      action.run();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return this;
  }

  private interface IoAction {
    void run() throws IOException;
  }
}
