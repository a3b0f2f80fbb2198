package io.kvindex.chaos;

import io.kvindex.demo.Workloads;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEventBatch;
import io.kvindex.wire.KvEventEncoder;
import io.kvindex.wire.WireEra;
import io.lettuce.core.api.sync.RedisCommands;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;

/** What the chaos scenarios read from the parts under test, and the poison they inject. */
final class ChaosProbes {
  private static final HttpClient HTTP =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  private ChaosProbes() {}

  /**
   * A batch Redis can never apply: a BlockStored whose KV-cache group index is past what the index
   * accepts.
   */
  static byte[] poisonPayload() {
    BlockStored poison =
        new BlockStored(
            List.of(42L),
            null,
            List.of(),
            Workloads.BLOCK_SIZE,
            null,
            null,
            null,
            null,
            70_000,
            null,
            null);
    return KvEventEncoder.of(WireEra.V0_22).encode(KvEventBatch.of(0, List.of(poison), 0));
  }

  /** An ingester's /readyz as "status body", or why it could not be asked. */
  static String readyz(int port) {
    try {
      HttpResponse<String> r =
          HTTP.send(
              HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/readyz"))
                  .timeout(Duration.ofSeconds(2))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      return r.statusCode() + " " + r.body().trim();
    } catch (IOException e) {
      return "unanswered: " + e;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted";
    }
  }

  static long usedMemory(RedisCommands<?, ?> redis) {
    return Long.parseLong(infoField(redis.info("memory"), "used_memory"));
  }

  static String infoField(String info, String name) {
    for (String line : info.split("\r?\n")) {
      if (line.startsWith(name + ":")) {
        return line.substring(name.length() + 1).trim();
      }
    }
    throw new IllegalStateException("INFO has no " + name);
  }
}
