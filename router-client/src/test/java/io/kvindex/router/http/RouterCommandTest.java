package io.kvindex.router.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

@UsesRedis
class RouterCommandTest {

  @Test
  void call_servesUntilStopped(RedisStandalone redis) throws Exception {
    RouterCommand command = new RouterCommand();
    StringWriter out = new StringWriter();
    CommandLine line = new CommandLine(command).setOut(new PrintWriter(out, true));
    CompletableFuture<Integer> exit =
        CompletableFuture.supplyAsync(
            () ->
                line.execute(
                    "--listen", "127.0.0.1:0",
                    "--redis-uri", redis.uri().toURI().toString(),
                    "--model", "org/m:v1=token:16",
                    "--lookup-budget", "250ms"));
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    Matcher port = Pattern.compile("listening on http://127.0.0.1:(\\d+)").matcher("");
    while (!port.reset(out.toString()).find() && System.nanoTime() < deadline && !exit.isDone()) {
      Thread.onSpinWait();
    }
    assertThat(port.reset(out.toString()).find()).as(out.toString()).isTrue();
    HttpResponse<String> health =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port.group(1) + "/readyz"))
                    .build(),
                HttpResponse.BodyHandlers.ofString());
    assertThat(health.statusCode()).isEqualTo(200);

    command.stop.countDown();
    assertThat(exit.get()).isZero();
  }

  @Test
  void call_badFlagsExitWithUsageError() {
    StringWriter err = new StringWriter();
    CommandLine line = new CommandLine(new RouterCommand()).setErr(new PrintWriter(err, true));
    line.setParameterExceptionHandler(
        (e, args) -> {
          e.getCommandLine().getErr().println(e.getMessage());
          return 2;
        });

    assertThat(line.execute("--model", "m=token")).isEqualTo(2);
    assertThat(err.toString()).contains("expected engine:<algorithm>:<seed>:<blockSize>");
    assertThat(line.execute("--lookup-budget", "soon")).isEqualTo(2);
    assertThat(err.toString()).contains("'soon' is not a duration");
    assertThat(line.execute("--listen", "nowhere")).isEqualTo(2);
    assertThat(err.toString()).contains("must be HOST:PORT");
  }
}
