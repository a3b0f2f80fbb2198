package io.kvindex.localredis;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.net.SocketFactory;

/**
 * A minimal RESP2 client for control commands (PING, INFO, CLUSTER ...): one short-lived loopback
 * connection per call, no threads. Replies map to {@code String}, {@code Long}, {@code
 * List<Object>} or {@code null}; an error reply throws {@link ErrorReply}. Thread-safe (stateless).
 */
final class Resp {
  private Resp() {}

  /** An error reply from the server, such as {@code ERR Unknown node}. */
  static final class ErrorReply extends IOException {
    private static final long serialVersionUID = 1L;

    ErrorReply(String message) {
      super(message);
    }
  }

  /** Sends one command to 127.0.0.1:{@code port} and returns its reply. */
  static Object call(int port, Duration timeout, String... args) throws IOException {
    return call(SocketFactory.getDefault(), port, timeout, args);
  }

  /** As {@link #call(int, Duration, String...)} over sockets from {@code sockets} (TLS ones). */
  static Object call(SocketFactory sockets, int port, Duration timeout, String... args)
      throws IOException {
    int millis = (int) Math.max(1, timeout.toMillis());
    try (Socket socket = sockets.createSocket()) {
      socket.setTcpNoDelay(true);
      socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), millis);
      socket.setSoTimeout(millis);
      OutputStream out = socket.getOutputStream();
      out.write(encode(args));
      out.flush();
      return read(new BufferedInputStream(socket.getInputStream()));
    }
  }

  /** Like {@link #call} for commands whose reply is text (status or bulk string). */
  static String text(SocketFactory sockets, int port, Duration timeout, String... args)
      throws IOException {
    Object reply = call(sockets, port, timeout, args);
    if (reply instanceof String s) {
      return s;
    }
    throw new IOException("expected a text reply to " + args[0] + ", got " + reply);
  }

  static byte[] encode(String... args) {
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    buf.writeBytes(("*" + args.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
    for (String arg : args) {
      byte[] bytes = arg.getBytes(StandardCharsets.UTF_8);
      buf.writeBytes(("$" + bytes.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
      buf.writeBytes(bytes);
      buf.writeBytes(new byte[] {'\r', '\n'});
    }
    return buf.toByteArray();
  }

  static Object read(InputStream in) throws IOException {
    int type = in.read();
    if (type < 0) {
      throw new EOFException("connection closed by the server");
    }
    String line = line(in);
    switch (type) {
      case '+':
        return line;
      case '-':
        throw new ErrorReply(line);
      case ':':
        return Long.parseLong(line);
      case '$':
        {
          int length = Integer.parseInt(line);
          if (length < 0) {
            return null;
          }
          byte[] bytes = in.readNBytes(length + 2);
          if (bytes.length != length + 2) {
            throw new EOFException("connection closed inside a bulk reply");
          }
          return new String(bytes, 0, length, StandardCharsets.UTF_8);
        }
      case '*':
        {
          int count = Integer.parseInt(line);
          if (count < 0) {
            return null;
          }
          List<Object> items = new ArrayList<>(count);
          for (int i = 0; i < count; i++) {
            items.add(readItem(in));
          }
          return items;
        }
      default:
        throw new IOException("not a RESP2 reply (type byte " + type + ")");
    }
  }

  /** Reads an array element; an error element is kept as its text rather than thrown. */
  private static Object readItem(InputStream in) throws IOException {
    try {
      return read(in);
    } catch (ErrorReply e) {
      return e.getMessage();
    }
  }

  private static String line(InputStream in) throws IOException {
    ByteArrayOutputStream buf = new ByteArrayOutputStream(64);
    int previous = -1;
    while (true) {
      int b = in.read();
      if (b < 0) {
        throw new EOFException("connection closed inside a reply line");
      }
      if (previous == '\r' && b == '\n') {
        byte[] bytes = buf.toByteArray();
        return new String(bytes, 0, bytes.length - 1, StandardCharsets.UTF_8);
      }
      buf.write(b);
      previous = b;
    }
  }

  /** Returns the value of {@code field} in an INFO or CLUSTER INFO reply, or {@code null}. */
  static String field(String info, String field) {
    String prefix = field + ":";
    for (String line : info.split("\r?\n")) {
      if (line.startsWith(prefix)) {
        return line.substring(prefix.length()).trim();
      }
    }
    return null;
  }
}
