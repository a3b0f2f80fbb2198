package io.kvindex.chaos;

import io.kvindex.demo.Stack;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

/**
 * Hostile {@code /score} requests from 4 threads, spread over the routers: a 10 000-byte pod name,
 * a speculative record asked to live 30 years, a 10 000-byte model name, a 9 MiB body. The routers
 * must refuse them and keep answering everyone else, and the index must not grow with them.
 */
final class HostileScoreFlood {
  /** What the flood sent, and how many the routers refused (4xx, or a connection closed). */
  record Sent(long requests, long refused) {}

  private HostileScoreFlood() {}

  static Sent run(List<URI> routers, Duration length) throws InterruptedException {
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    String tokens =
        java.util.stream.IntStream.range(0, 256)
            .mapToObj(Integer::toString)
            .collect(Collectors.joining(",", "[", "]"));
    String longName = "p".repeat(10_000);
    List<String> bodies =
        List.of(
            "{\"model\":\""
                + Stack.MODEL
                + "\",\"token_ids\":"
                + tokens
                + ",\"pods\":[\""
                + longName
                + "\"]}",
            "{\"model\":\""
                + Stack.MODEL
                + "\",\"token_ids\":"
                + tokens
                + ",\"pods\":[\"pod-0\"],\"record_ttl_ms\":1000000000000}",
            "{\"model\":\"" + longName + "\",\"token_ids\":" + tokens + "}",
            "x".repeat(9 << 20));
    AtomicLong sent = new AtomicLong();
    AtomicLong refusedByRouter = new AtomicLong();
    long until = System.nanoTime() + length.toNanos();
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      int id = t;
      Thread thread =
          new Thread(
              () -> {
                int i = id;
                while (System.nanoTime() < until) {
                  URI router = routers.get(i % routers.size());
                  String body = bodies.get(i++ % bodies.size());
                  try {
                    HttpResponse<Void> r =
                        http.send(
                            HttpRequest.newBuilder(router.resolve("/score"))
                                .timeout(Duration.ofSeconds(5))
                                .header("Content-Type", "application/json")
                                .POST(HttpRequest.BodyPublishers.ofString(body))
                                .build(),
                            HttpResponse.BodyHandlers.discarding());
                    sent.incrementAndGet();
                    if (r.statusCode() >= 400 && r.statusCode() < 500) {
                      refusedByRouter.incrementAndGet();
                    }
                  } catch (IOException e) {
                    sent.incrementAndGet(); // the router closed an oversized request
                    refusedByRouter.incrementAndGet();
                  } catch (InterruptedException e) {
                    return;
                  }
                }
              },
              "chaos-flood-" + t);
      thread.setDaemon(true);
      thread.start();
      threads.add(thread);
    }
    for (Thread t : threads) {
      t.join();
    }
    return new Sent(sent.get(), refusedByRouter.get());
  }
}
