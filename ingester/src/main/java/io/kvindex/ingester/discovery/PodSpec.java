package io.kvindex.ingester.discovery;

import io.kvindex.common.Check;
import io.kvindex.index.KeyMode;
import io.kvindex.index.StreamId;
import java.util.List;
import java.util.Locale;

/**
 * One pod as discovery reports it. Immutable and thread-safe.
 *
 * @param name the pod name, unique in the fleet
 * @param model the model the pod serves
 * @param publisherEndpoint the pod's ZMQ PUB endpoint for rank 0 ({@code tcp://host:port}), or,
 *     when {@code bind} is true, the address this ingester binds for a publisher that connects out
 * @param bind true when the publisher connects out to us and we bind
 * @param replayEndpoint the pod's replay ROUTER endpoint for rank 0, or {@code null} if none
 * @param metricsUrl the pod's Prometheus {@code /metrics} URL, or {@code null} if none
 * @param dpRanks the data-parallel ranks the pod runs (rank r uses port + r, as vLLM does)
 * @param keyMode how the index keys this model's blocks (default {@link KeyMode#ENGINE})
 * @param topic the ZMQ topic to subscribe to ({@code ""} for all)
 * @param incarnation what tells this pod's engine from an earlier one under the same name (for
 *     Kubernetes: the pod's UID and its engine container's ID and restart count), {@code ""} when
 *     the source cannot tell; a change means the engine lost its cache
 */
public record PodSpec(
    String name,
    String model,
    String publisherEndpoint,
    boolean bind,
    String replayEndpoint,
    String metricsUrl,
    List<Integer> dpRanks,
    KeyMode keyMode,
    String topic,
    String incarnation) {

  /** The key modes a pod spec may name, as written in discovery files and flags. */
  public static final List<String> KEY_MODES = List.of("engine", "token");

  /**
   * The most data-parallel ranks one pod may run: each is a stream of its own (a worker thread, a
   * socket, a lease), so a pod spec, a discovery file or an annotation cannot ask for thousands.
   */
  public static final int MAX_DP_RANKS = 64;

  public PodSpec {
    Check.notBlank(name, "name");
    Check.notBlank(model, "model");
    Check.notBlank(publisherEndpoint, "publisherEndpoint");
    dpRanks = ranks(dpRanks);
    keyMode = keyMode == null ? KeyMode.ENGINE : keyMode;
    topic = topic == null ? "" : topic;
    incarnation = incarnation == null ? "" : incarnation;
    int highest = dpRanks.stream().mapToInt(Integer::intValue).max().orElse(0);
    offset(publisherEndpoint, highest);
    if (replayEndpoint != null) {
      offset(replayEndpoint, highest);
    }
  }

  /**
   * Ranks as given ([0] for none), checked: distinct, from 0 to 65535, at most {@link
   * #MAX_DP_RANKS}.
   */
  private static List<Integer> ranks(List<Integer> given) {
    List<Integer> ranks = List.copyOf(given == null || given.isEmpty() ? List.of(0) : given);
    if (ranks.size() > MAX_DP_RANKS) {
      throw new IllegalArgumentException(
          "dpRanks names "
              + ranks.size()
              + " ranks, over the limit of "
              + MAX_DP_RANKS
              + " per pod: list the ranks this pod runs (its --data-parallel-size-local)");
    }
    if (new java.util.HashSet<>(ranks).size() != ranks.size()) {
      throw new IllegalArgumentException("dpRanks names a rank twice: " + ranks);
    }
    for (int r : ranks) {
      Check.between(r, 0, 0xFFFF, "dpRanks[]");
    }
    return ranks;
  }

  /** A spec whose source cannot tell one incarnation of the pod's engine from the next. */
  public PodSpec(
      String name,
      String model,
      String publisherEndpoint,
      boolean bind,
      String replayEndpoint,
      String metricsUrl,
      List<Integer> dpRanks,
      KeyMode keyMode,
      String topic) {
    this(
        name,
        model,
        publisherEndpoint,
        bind,
        replayEndpoint,
        metricsUrl,
        dpRanks,
        keyMode,
        topic,
        "");
  }

  /** A single-rank, engine-keyed pod that binds its publisher, with the given endpoints. */
  public static PodSpec of(
      String name, String model, String publisherEndpoint, String replayEndpoint) {
    return new PodSpec(
        name,
        model,
        publisherEndpoint,
        false,
        replayEndpoint,
        null,
        List.of(0),
        KeyMode.ENGINE,
        "");
  }

  /** This spec with another metrics URL. */
  public PodSpec withMetricsUrl(String url) {
    return new PodSpec(
        name,
        model,
        publisherEndpoint,
        bind,
        replayEndpoint,
        url,
        dpRanks,
        keyMode,
        topic,
        incarnation);
  }

  /**
   * A key mode as discovery files and flags write it ({@code engine} or {@code token}, any case);
   * {@code null} means engine.
   *
   * @throws IllegalArgumentException naming the accepted modes
   */
  public static KeyMode keyMode(String text) {
    if (text == null) {
      return KeyMode.ENGINE;
    }
    String mode = text.toLowerCase(Locale.ROOT);
    if (!KEY_MODES.contains(mode)) {
      throw new IllegalArgumentException("keyMode must be one of " + KEY_MODES + ", got " + text);
    }
    return KeyMode.valueOf(mode.toUpperCase(Locale.ROOT));
  }

  /** The publisher endpoint of a rank (vLLM adds the rank to a TCP port). */
  public String publisherEndpoint(int rank) {
    return offset(publisherEndpoint, rank);
  }

  /** The replay endpoint of a rank, or {@code null} when the pod has none. */
  public String replayEndpoint(int rank) {
    return replayEndpoint == null ? null : offset(replayEndpoint, rank);
  }

  static String offset(String endpoint, int rank) {
    if (rank == 0) {
      return endpoint;
    }
    if (endpoint.startsWith("inproc://")) {
      return endpoint + "_dp" + rank;
    }
    int colon = endpoint.lastIndexOf(':');
    if (!endpoint.startsWith("tcp://") || colon < "tcp://".length()) {
      throw new IllegalArgumentException(
          "endpoint "
              + endpoint
              + " cannot carry data-parallel rank "
              + rank
              + ": use tcp://host:port (the rank is added to the port) or inproc://");
    }
    int port;
    try {
      port = Integer.parseInt(endpoint.substring(colon + 1));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "endpoint " + endpoint + " has no numeric port to add data-parallel rank " + rank, e);
    }
    if (port + rank > 0xFFFF) {
      throw new IllegalArgumentException(
          "endpoint "
              + endpoint
              + " cannot carry data-parallel rank "
              + rank
              + ": port + rank passes 65535");
    }
    return endpoint.substring(0, colon + 1) + (port + rank);
  }

  /** The pod's streams, one per data-parallel rank. */
  public List<StreamId> streams() {
    return dpRanks.stream().map(r -> new StreamId(model, name, r)).toList();
  }

  @Override
  public String toString() {
    return name + "(" + model + ", " + publisherEndpoint + ")";
  }
}
