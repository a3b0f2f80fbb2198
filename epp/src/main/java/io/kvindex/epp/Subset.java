package io.kvindex.epp;

import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.Metadata;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The proxy's candidate subset ({@code envoy.lb.subset_hint} / {@code
 * x-gateway-destination-endpoint-subset} in the request's metadata): the endpoints the pick must
 * come from, when the proxy names them. Entries are {@code ip:port} (an endpoint) or a bare IP (any
 * port of that pod), given as a list or, as some proxies copy a header, one comma-separated string.
 * Immutable, so thread-safe.
 */
final class Subset {
  private final Set<String> addresses;
  private final Set<String> ips;

  private Subset(Set<String> addresses, Set<String> ips) {
    this.addresses = addresses;
    this.ips = ips;
  }

  /** The endpoints of {@code all} the request may go to: all of them when no subset is given. */
  static List<Endpoint> apply(Metadata metadata, List<Endpoint> all) {
    Value hint = Messages.metadata(metadata, Messages.SUBSET_NAMESPACE, Messages.SUBSET);
    if (hint == null) {
      return all;
    }
    Subset subset = of(hint);
    List<Endpoint> out = new ArrayList<>();
    for (Endpoint e : all) {
      if (subset.addresses.contains(e.address()) || subset.ips.contains(e.ip())) {
        out.add(e);
      }
    }
    return out;
  }

  private static Subset of(Value hint) {
    List<String> entries = new ArrayList<>();
    if (hint.hasListValue()) {
      for (Value v : hint.getListValue().getValuesList()) {
        if (v.hasStringValue()) {
          split(v.getStringValue(), entries);
        }
      }
    } else if (hint.hasStringValue()) {
      split(hint.getStringValue(), entries);
    }
    Set<String> addresses = new HashSet<>();
    Set<String> ips = new HashSet<>();
    for (String entry : entries) {
      String ip = bareIp(entry);
      if (ip != null) {
        ips.add(ip);
      } else {
        addresses.add(entry);
      }
    }
    return new Subset(addresses, ips);
  }

  private static void split(String value, List<String> into) {
    for (String part : value.split(",")) {
      String p = part.trim();
      if (!p.isEmpty()) {
        into.add(p);
      }
    }
  }

  /** The IP of an entry without a port ({@code 10.0.0.1}, {@code fd00::1}), else null. */
  private static String bareIp(String entry) {
    if (entry.startsWith("[")) {
      return entry.endsWith("]") ? entry.substring(1, entry.length() - 1) : null;
    }
    int colons = entry.length() - entry.replace(":", "").length();
    return colons == 1 ? null : entry;
  }
}
