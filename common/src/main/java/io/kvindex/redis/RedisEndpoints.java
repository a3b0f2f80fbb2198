package io.kvindex.redis;

import io.kvindex.common.Check;
import io.lettuce.core.RedisURI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A parsed Redis URI: one server or a cluster's seed nodes. Immutable, thread-safe.
 *
 * @param cluster true for a Redis Cluster
 * @param uris one URI for a server, one per seed node for a cluster
 */
record RedisEndpoints(boolean cluster, List<RedisURI> uris) {

  private static final String FORMS =
      "use redis://[user:password@]host:port, rediss:// for TLS, or"
          + " redis-cluster://[user:password@]host1:port1,host2:port2 (rediss-cluster:// for TLS)";

  RedisEndpoints {
    uris = List.copyOf(uris);
  }

  static RedisEndpoints parse(String uri, Duration timeout) {
    String text = Check.notBlank(uri, "uri").trim();
    int schemeEnd = text.indexOf("://");
    if (schemeEnd < 0) {
      throw invalid(text, "no scheme");
    }
    String scheme = text.substring(0, schemeEnd).toLowerCase(Locale.ROOT);
    List<String> parts;
    boolean cluster;
    if (scheme.equals("redis-cluster") || scheme.equals("rediss-cluster")) {
      parts =
          expandCluster(scheme.substring(0, scheme.indexOf('-')), text.substring(schemeEnd + 3));
      cluster = true;
    } else if (text.contains(",")) {
      parts = List.of(text.split(","));
      cluster = true;
    } else {
      parts = List.of(text);
      cluster = false;
    }
    List<RedisURI> uris = new ArrayList<>();
    for (String part : parts) {
      uris.add(single(part.trim(), timeout));
    }
    return new RedisEndpoints(cluster, uris);
  }

  private static List<String> expandCluster(String scheme, String rest) {
    int authorityEnd = rest.length();
    for (char c : new char[] {'/', '?'}) {
      int i = rest.indexOf(c);
      if (i >= 0 && i < authorityEnd) {
        authorityEnd = i;
      }
    }
    String authority = rest.substring(0, authorityEnd);
    String tail = rest.substring(authorityEnd);
    int at = authority.lastIndexOf('@');
    String userInfo = at < 0 ? "" : authority.substring(0, at + 1);
    List<String> parts = new ArrayList<>();
    for (String host : authority.substring(at + 1).split(",")) {
      if (!host.isBlank()) {
        parts.add(scheme + "://" + userInfo + host.trim() + tail);
      }
    }
    if (parts.isEmpty()) {
      throw invalid(scheme + "-cluster://" + rest, "no seed node");
    }
    return parts;
  }

  private static RedisURI single(String text, Duration timeout) {
    String lower = text.toLowerCase(Locale.ROOT);
    if (!lower.startsWith("redis://") && !lower.startsWith("rediss://")) {
      throw invalid(text, "unsupported scheme");
    }
    try {
      RedisURI parsed = RedisURI.create(text);
      parsed.setTimeout(timeout);
      return parsed;
    } catch (RuntimeException e) {
      throw invalid(text, e.getMessage());
    }
  }

  private static IllegalArgumentException invalid(String uri, String problem) {
    return new IllegalArgumentException(
        "invalid Redis URI '" + masked(uri) + "' (" + problem + "): " + FORMS);
  }

  /** The URI with any password replaced by {@code ***}, for messages and logs. */
  static String masked(String uri) {
    return uri.replaceAll("(//[^:/@,]*):[^@/]*@", "$1:***@");
  }
}
