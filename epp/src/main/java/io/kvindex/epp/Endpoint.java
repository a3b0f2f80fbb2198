package io.kvindex.epp;

import io.kvindex.common.Check;
import java.util.List;

/**
 * One endpoint the picker may send a request to: a pod's address and one of the pool's target
 * ports. Immutable, so thread-safe.
 *
 * @param pod the pod's name in the index, as the ingesters name it ({@code --kubernetes-pod-name}:
 *     its Kubernetes name, or its IP)
 * @param rank the target port's position in the pool's {@code targetPorts} (0 for the first): the
 *     data-parallel rank a pod serving several ports answers on that port
 * @param ip the pod's IP
 * @param port the target port
 * @param key the name the pick policy knows the endpoint by: the pod's name when the pool has one
 *     target port, else {@code <pod>-rank-<rank>}, as the reference picker names such endpoints
 */
public record Endpoint(String pod, int rank, String ip, int port, String key) {

  public Endpoint {
    Check.notBlank(pod, "pod");
    Check.atLeast(rank, 0, "rank");
    Check.notBlank(ip, "ip");
    Check.between(port, 1, 65535, "port");
    Check.notBlank(key, "key");
  }

  /** An endpoint of a pool with one target port: its key is the pod's name. */
  public static Endpoint of(String pod, String ip, int port) {
    return new Endpoint(pod, 0, ip, port, pod);
  }

  /** An endpoint of a pool with several target ports, keyed {@code <pod>-rank-<rank>}. */
  public static Endpoint ranked(String pod, int rank, String ip, int port) {
    return new Endpoint(pod, rank, ip, port, pod + "-rank-" + rank);
  }

  /** The endpoint of {@code endpoints} at {@code address} ({@code ip:port}), or null. */
  static Endpoint at(List<Endpoint> endpoints, String address) {
    for (Endpoint e : endpoints) {
      if (e.address().equals(address)) {
        return e;
      }
    }
    return null;
  }

  /** {@code ip:port}, an IPv6 address in brackets: the form the protocol's headers carry. */
  public String address() {
    return (ip.indexOf(':') >= 0 ? "[" + ip + "]" : ip) + ":" + port;
  }
}
