package io.kvindex.service;

import io.kvindex.common.Check;
import io.kvindex.service.HttpService.Response;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;

/**
 * The optional shared secret of an {@link HttpService}: requests must carry {@code Authorization:
 * Bearer <token>}, except the probes and (unless asked) {@code /metrics}. Immutable and
 * thread-safe.
 */
final class BearerAuth {
  private static final String SCHEME = "Bearer ";
  private static final String CHALLENGE = "Bearer realm=\"kvindex\"";

  /** No token: every request passes. */
  static final BearerAuth OPEN = new BearerAuth(null, false);

  private final byte[] token;
  private final boolean metrics;

  private BearerAuth(byte[] token, boolean metrics) {
    this.token = token;
    this.metrics = metrics;
  }

  static BearerAuth of(String token, boolean metrics) {
    return token == null
        ? OPEN
        : new BearerAuth(Check.notBlank(token, "token").getBytes(StandardCharsets.UTF_8), metrics);
  }

  /** The refusal of a request to {@code path} with this {@code Authorization} header, or null. */
  Response refusal(String path, String authorization) {
    if (token == null || path.equals("/healthz") || path.equals("/readyz")) {
      return null;
    }
    if (path.equals("/metrics") && !metrics) {
      return null;
    }
    if (authorization == null
        || !authorization.regionMatches(true, 0, SCHEME, 0, SCHEME.length())) {
      return Response.error(401, "authorization required: send 'Authorization: Bearer <token>'")
          .withHeader("WWW-Authenticate", CHALLENGE);
    }
    byte[] given = authorization.substring(SCHEME.length()).trim().getBytes(StandardCharsets.UTF_8);
    // Constant time in the given token's content: isEqual's time depends on its first argument's
    // length alone.
    if (!MessageDigest.isEqual(token, given)) {
      return Response.error(401, "the token in 'Authorization: Bearer <token>' is not valid")
          .withHeader("WWW-Authenticate", CHALLENGE + ", error=\"invalid_token\"");
    }
    return null;
  }

  /**
   * The token in {@code file}, trimmed.
   *
   * @throws IllegalArgumentException if the file cannot be read or holds only white space
   */
  static String read(Path file) {
    Check.notNull(file, "token file");
    String token;
    try {
      token = Files.readString(file, StandardCharsets.UTF_8).trim();
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "cannot read the auth token file " + file + " (" + e.getClass().getSimpleName() + ")", e);
    }
    if (token.isEmpty()) {
      throw new IllegalArgumentException("the auth token file " + file + " is empty");
    }
    return token;
  }
}
