package io.kvindex.redis;

import io.kvindex.common.Check;
import io.lettuce.core.RedisURI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A parsed Redis URI: one server (named directly or found through Sentinel) or a cluster's seed
 * nodes. Immutable, thread-safe.
 *
 * <p>No message of this class quotes a URI unmasked, and none carries lettuce's own parse error:
 * {@code RedisURI.create} puts fragments of the text it could not parse (a password with a {@code
 * /} in it, say) into its messages.
 *
 * @param cluster true for a Redis Cluster
 * @param uris one URI for a server or a Sentinel set, one per seed node for a cluster
 */
record RedisEndpoints(boolean cluster, List<RedisURI> uris) {

  private static final String FORMS =
      "use redis://[[user:]password@]host:port[/db], rediss:// for TLS,"
          + " redis-cluster://[[user:]password@]host1:port1,host2:port2 (rediss-cluster:// for"
          + " TLS), or redis-sentinel://[[user:]password@]host1:port1[,host2:port2][/db]#master"
          + " (rediss-sentinel:// for TLS; ?sentinelPassword=... if the sentinels need one)";

  /** A query parameter of ours: the password of the sentinels, as opposed to the data nodes'. */
  private static final String SENTINEL_PASSWORD = "sentinelPassword";

  private static final Pattern SENTINEL_PASSWORD_PARAMETER =
      Pattern.compile("([?&])" + SENTINEL_PASSWORD + "=([^&#]*)&?", Pattern.CASE_INSENSITIVE);

  private static final Pattern SECRET_PARAMETER =
      Pattern.compile("(?i)([?&;][^=&#?;]*password=)[^&#;]*");

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
    if (scheme.equals("redis-sentinel") || scheme.equals("rediss-sentinel")) {
      return new RedisEndpoints(false, List.of(sentinel(text, timeout)));
    }
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
    int at = rest.lastIndexOf('@');
    int authorityEnd = rest.length();
    for (char c : new char[] {'/', '?'}) {
      int i = rest.indexOf(c, at + 1);
      if (i >= 0 && i < authorityEnd) {
        authorityEnd = i;
      }
    }
    String authority = rest.substring(0, authorityEnd);
    String tail = rest.substring(authorityEnd);
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
    RedisURI parsed = create(text);
    parsed.setTimeout(timeout);
    return parsed;
  }

  /**
   * A Sentinel URI: lettuce asks the sentinels for the current primary on every (re)connect. The
   * URI's password is the data nodes'; {@code sentinelPassword} (ours, taken out before lettuce
   * parses the rest) is the sentinels'.
   */
  private static RedisURI sentinel(String text, Duration timeout) {
    String sentinelPassword = null;
    String rest = text;
    Matcher m = SENTINEL_PASSWORD_PARAMETER.matcher(text);
    if (m.find()) {
      sentinelPassword = decode(m.group(2));
      rest = text.substring(0, m.start()) + m.group(1) + text.substring(m.end());
      rest = rest.replace("?#", "#").replace("&#", "#");
      if (rest.endsWith("?") || rest.endsWith("&")) {
        rest = rest.substring(0, rest.length() - 1);
      }
    }
    RedisURI parsed = create(rest);
    String master = parsed.getSentinelMasterId();
    if (master == null || master.isBlank()) {
      throw invalid(text, "no master name: end it with #<master> or ?sentinelMasterId=<master>");
    }
    if (parsed.getSentinels().isEmpty()) {
      throw invalid(text, "no sentinel");
    }
    parsed.setTimeout(timeout);
    for (RedisURI sentinel : parsed.getSentinels()) {
      sentinel.setTimeout(timeout);
      if (sentinelPassword != null) {
        sentinel.setAuthentication(sentinelPassword.toCharArray());
      }
    }
    return parsed;
  }

  private static String decode(String percentEncoded) {
    try {
      return URLDecoder.decode(percentEncoded.replace("+", "%2B"), StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "invalid Redis URI: the " + SENTINEL_PASSWORD + " parameter is badly percent-encoded");
    }
  }

  /** lettuce's parse; its exceptions quote the text, so they are replaced, never wrapped. */
  private static RedisURI create(String text) {
    try {
      return RedisURI.create(text);
    } catch (RuntimeException e) {
      throw invalid(text, "lettuce cannot parse it: " + e.getClass().getSimpleName());
    }
  }

  private static IllegalArgumentException invalid(String uri, String problem) {
    return new IllegalArgumentException(
        "invalid Redis URI '" + masked(uri) + "' (" + problem + "): " + FORMS);
  }

  /**
   * The text with the user info of every URI in it masked ({@code user:***@}, {@code ***@}) and the
   * value of every query parameter named like {@code password} replaced by {@code ***}, for
   * messages and logs. The user info ends at the last {@code @} before the next URI (or the end),
   * so a password with {@code /}, {@code @} or {@code ,} in it, encoded or not, is masked whole.
   */
  static String masked(String text) {
    if (text == null) {
      return null;
    }
    List<Integer> starts = new ArrayList<>();
    for (int i = text.indexOf("://"); i >= 0; i = text.indexOf("://", i + 3)) {
      starts.add(i + 3);
    }
    if (starts.isEmpty()) {
      starts.add(0);
    }
    StringBuilder out = new StringBuilder(text.length());
    int copied = 0;
    for (int s = 0; s < starts.size(); s++) {
      int from = starts.get(s);
      int end = s + 1 < starts.size() ? starts.get(s + 1) - 3 : text.length();
      int at = text.lastIndexOf('@', end - 1);
      if (at < from) {
        continue;
      }
      String userInfo = text.substring(from, at);
      int colon = userInfo.indexOf(':');
      out.append(text, copied, from).append(colon < 0 ? "" : userInfo.substring(0, colon + 1));
      out.append("***");
      copied = at;
    }
    out.append(text, copied, text.length());
    return SECRET_PARAMETER.matcher(out).replaceAll("$1***");
  }
}
