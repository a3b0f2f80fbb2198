package io.kvindex.cli;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * Reads token ids: non-negative decimal integers separated by commas and/or white space. Not
 * thread-safe (one instance per file).
 */
final class TokenFile {
  private final String source;
  private final byte[] text;
  private int[] tokens = new int[1024];
  private int count;

  private TokenFile(String source, byte[] text) {
    this.source = source;
    this.text = text;
  }

  /** The token ids in {@code file}. */
  static int[] read(Path file) {
    byte[] text;
    try {
      text = Files.readAllBytes(file);
    } catch (NoSuchFileException e) {
      throw new InputException("cannot read token file " + file + ": no such file", e);
    } catch (AccessDeniedException e) {
      throw new InputException("cannot read token file " + file + ": permission denied", e);
    } catch (IOException e) {
      throw new InputException("cannot read token file " + file + ": " + e.getMessage(), e);
    }
    return parse(file.toString(), text);
  }

  /** The token ids on {@code in}, read to its end; {@code source} names it in errors. */
  static int[] read(InputStream in, String source) {
    try {
      return parse(source, in.readAllBytes());
    } catch (IOException e) {
      throw new InputException("cannot read token ids from " + source + ": " + e.getMessage(), e);
    }
  }

  static int[] parse(String source, byte[] text) {
    return new TokenFile(source, text).parse();
  }

  private int[] parse() {
    int line = 1;
    for (int i = 0; i < text.length; ) {
      byte b = text[i];
      if (isSeparator(b)) {
        if (b == '\n') {
          line++;
        }
        i++;
        continue;
      }
      int end = i;
      while (end < text.length && !isSeparator(text[end])) {
        end++;
      }
      add(token(i, end, line));
      i = end;
    }
    return Arrays.copyOf(tokens, count);
  }

  private int token(int from, int to, int line) {
    long value = 0;
    for (int i = from; i < to; i++) {
      byte b = text[i];
      if (b < '0' || b > '9' || value > Integer.MAX_VALUE) {
        throw bad(from, to, line, problem(from, to));
      }
      value = value * 10 + (b - '0');
    }
    if (value > Integer.MAX_VALUE) {
      throw bad(from, to, line, "is too large (token ids go up to " + Integer.MAX_VALUE + ")");
    }
    return (int) value;
  }

  private String problem(int from, int to) {
    if (text[from] == '-' && to - from > 1 && allDigits(from + 1, to)) {
      return "is negative; token ids are non-negative integers";
    }
    if (allDigits(from, to)) {
      return "is too large (token ids go up to " + Integer.MAX_VALUE + ")";
    }
    return "is not a token id; expected non-negative integers separated by commas or white space";
  }

  private boolean allDigits(int from, int to) {
    for (int i = from; i < to; i++) {
      if (text[i] < '0' || text[i] > '9') {
        return false;
      }
    }
    return true;
  }

  private InputException bad(int from, int to, int line, String problem) {
    String item = new String(text, from, Math.min(to - from, 40), StandardCharsets.UTF_8);
    return new InputException(
        source + " line " + line + ": token #" + (count + 1) + " '" + item + "' " + problem);
  }

  private void add(int token) {
    if (count == tokens.length) {
      tokens = Arrays.copyOf(tokens, count * 2);
    }
    tokens[count++] = token;
  }

  private static boolean isSeparator(byte b) {
    return b == ',' || b == ' ' || b == '\n' || b == '\r' || b == '\t' || b == '\f';
  }
}
