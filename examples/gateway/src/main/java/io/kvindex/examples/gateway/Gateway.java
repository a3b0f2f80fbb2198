package io.kvindex.examples.gateway;

import io.kvindex.router.KvRouter;
import io.kvindex.router.ModelKeys;
import io.kvindex.router.Pick;
import io.kvindex.router.Scores;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A minimal inference gateway: for each prompt it asks kvindex which candidate pod holds the
 * longest cached prefix, picks one with the pods' loads, counts the request as running there until
 * it finishes, and records the route so that the next similar prompt sees it before vLLM reports
 * the blocks. It uses only the router library's public API. Thread-safe.
 *
 * <p>Run: {@code java -cp ... io.kvindex.examples.gateway.Gateway redis://127.0.0.1:6379
 * Qwen/Qwen3-8B pod-0,pod-1 < prompts.txt}, one prompt of space-separated token ids a line; it
 * prints the chosen pod of each.
 */
public final class Gateway implements AutoCloseable {
  /** How long a recorded route counts before vLLM's own events take over. */
  static final Duration ROUTE_TTL = Duration.ofSeconds(2);

  private final KvRouter router;
  private final String model;
  private final List<String> pods;
  private final Map<String, Integer> running = new ConcurrentHashMap<>();

  /** A gateway over {@code pods} serving {@code model}, which it keys as the pods hash. */
  public Gateway(KvRouter router, String model, List<String> pods) {
    this.router = router;
    this.model = model;
    this.pods = List.copyOf(pods);
  }

  /** Picks the pod for {@code tokenIds} and counts the request as running there. */
  public Pick route(int[] tokenIds) {
    Scores scores = router.score(model, null, tokenIds, pods);
    Pick pick = router.pick(scores, pods, pod -> running.getOrDefault(pod, 0));
    running.merge(pick.pod(), 1, Integer::sum);
    if (scores.indexAvailable()) {
      router.recordRoute(model, pick.pod(), scores.blockKeys(), ROUTE_TTL);
    }
    return pick;
  }

  /** The request sent to {@code pod} has finished. */
  public void finished(String pod) {
    running.computeIfPresent(pod, (p, n) -> n > 1 ? n - 1 : null);
  }

  @Override
  public void close() {
    router.close();
  }

  /** {@code REDIS_URI MODEL POD[,POD...]}; prompts on standard input, one a line. */
  public static void main(String[] args) throws IOException {
    if (args.length != 3) {
      System.err.println("usage: Gateway REDIS_URI MODEL POD[,POD...] < prompts (token ids)");
      System.exit(2);
    }
    KvRouter router =
        KvRouter.builder()
            .redisUri(args[0])
            .model(args[1], ModelKeys.engine("sha256_cbor", "42", 16)) // as the pods hash
            .build();
    try (Gateway gateway = new Gateway(router, args[1], Arrays.asList(args[2].split(",")));
        BufferedReader in =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        if (!line.isBlank()) {
          int[] tokens =
              Arrays.stream(line.trim().split("\\s+")).mapToInt(Integer::parseInt).toArray();
          Pick pick = gateway.route(tokens);
          System.out.println(pick.pod() + " " + pick.reason() + " " + pick.matchedBlocks());
          gateway.finished(pick.pod()); // a real gateway calls this when the response is done
        }
      }
    }
  }
}
