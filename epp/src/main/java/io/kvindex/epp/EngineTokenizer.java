package io.kvindex.epp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;

/**
 * Tokenizes a text or chat prompt exactly as the engine will: by asking an engine of the model,
 * with vLLM's {@code POST /tokenize} and the request's own prompt or messages and chat-template
 * arguments. Thread-safe.
 */
final class EngineTokenizer {
  /** Why a prompt could not be tokenized. */
  static final class Failed extends Exception {
    Failed(String message, Throwable cause) {
      super(message, cause);
    }
  }

  private final HttpClient http;
  private final Duration timeout;
  private final ObjectMapper json;

  EngineTokenizer(Duration timeout, Executor executor, ObjectMapper json) {
    this.timeout = timeout;
    this.json = json;
    this.http =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(timeout)
            .executor(executor)
            .build();
  }

  /**
   * The prompt's token ids, from the engine at {@code endpoint}, without blocking a thread: the
   * future completes on the HTTP client's executor, or fails with {@link Failed} (wrapped in a
   * {@link java.util.concurrent.CompletionException}) when the engine does not answer in time, or
   * answers no token list.
   */
  CompletableFuture<int[]> tokenize(Endpoint endpoint, ObjectNode body) {
    String url = "http://" + endpoint.address() + "/tokenize";
    HttpRequest post =
        HttpRequest.newBuilder(URI.create(url))
            .timeout(timeout)
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofByteArray(bytes(body)))
            .build();
    return http.sendAsync(post, HttpResponse.BodyHandlers.ofByteArray())
        .handle(
            (response, e) -> {
              try {
                if (e != null) {
                  Throwable cause =
                      e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
                  throw new Failed("POST " + url + " failed: " + cause, cause);
                }
                if (response.statusCode() != 200) {
                  throw new Failed(
                      "POST "
                          + url
                          + " answered "
                          + response.statusCode()
                          + ": "
                          + new String(response.body(), java.nio.charset.StandardCharsets.UTF_8),
                      null);
                }
                return tokens(response.body(), endpoint);
              } catch (Failed failed) {
                throw new CompletionException(failed);
              }
            });
  }

  private byte[] bytes(ObjectNode body) {
    try {
      return json.writeValueAsBytes(body);
    } catch (IOException e) {
      throw new IllegalStateException("a JSON tree could not be written", e);
    }
  }

  private int[] tokens(byte[] body, Endpoint endpoint) throws Failed {
    try {
      JsonNode tokens = json.readTree(body).path("tokens");
      if (!tokens.isArray()) {
        throw new Failed(endpoint.address() + "/tokenize answered no 'tokens' list", null);
      }
      int[] ids = new int[tokens.size()];
      for (int i = 0; i < ids.length; i++) {
        ids[i] = tokens.get(i).intValue();
      }
      return ids;
    } catch (IOException e) {
      throw new Failed(endpoint.address() + "/tokenize answered something not JSON", e);
    }
  }
}
