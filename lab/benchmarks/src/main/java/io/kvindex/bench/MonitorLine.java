package io.kvindex.bench;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * One line of Redis's {@code MONITOR} feed, {@code 1700000000.123456 [0 127.0.0.1:5000] "HMGET"
 * "key" "\x00\x01"}, parsed back into the command's arguments as bytes. Arguments are in Redis's
 * quoted form: {@code \\}, {@code \"}, {@code \n}, {@code \r}, {@code \t}, {@code \a}, {@code \b}
 * and {@code \xHH} escapes, every other byte as itself. Immutable and thread-safe.
 *
 * @param client the source in brackets after the database ({@code 127.0.0.1:5000}, or {@code lua}
 *     for a command a script ran)
 * @param args the command name and its arguments
 */
record MonitorLine(String client, List<byte[]> args) {
  MonitorLine {
    args = List.copyOf(args);
  }

  /** The line parsed, or empty for a line that is not a command (the {@code OK} of MONITOR). */
  static Optional<MonitorLine> parse(String line) {
    int open = line.indexOf('[');
    int close = line.indexOf(']', open + 1);
    if (open < 0 || close < 0) {
      return Optional.empty();
    }
    String source = line.substring(open + 1, close).trim();
    int space = source.indexOf(' ');
    String client = space < 0 ? source : source.substring(space + 1);
    List<byte[]> args = new ArrayList<>();
    int at = close + 1;
    while (true) {
      at = line.indexOf('"', at);
      if (at < 0) {
        break;
      }
      ByteArrayOutputStream arg = new ByteArrayOutputStream();
      at = unquote(line, at + 1, arg);
      args.add(arg.toByteArray());
    }
    return args.isEmpty() ? Optional.empty() : Optional.of(new MonitorLine(client, args));
  }

  /** The command name, upper case. */
  String command() {
    return new String(args.get(0), java.nio.charset.StandardCharsets.US_ASCII).toUpperCase();
  }

  /** Reads one quoted argument from just after its opening quote; returns past its closing one. */
  private static int unquote(String line, int at, ByteArrayOutputStream out) {
    while (at < line.length()) {
      char c = line.charAt(at++);
      if (c == '"') {
        return at;
      }
      if (c != '\\') {
        out.write(c);
        continue;
      }
      char e = line.charAt(at++);
      switch (e) {
        case 'n' -> out.write('\n');
        case 'r' -> out.write('\r');
        case 't' -> out.write('\t');
        case 'a' -> out.write(7);
        case 'b' -> out.write('\b');
        case 'x' -> {
          out.write(Integer.parseInt(line.substring(at, at + 2), 16));
          at += 2;
        }
        default -> out.write(e); // \\ and \"
      }
    }
    throw new IllegalArgumentException("an unterminated argument in a MONITOR line: " + line);
  }
}
