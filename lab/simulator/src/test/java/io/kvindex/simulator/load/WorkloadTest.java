package io.kvindex.simulator.load;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.simulator.InferenceRequest;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

public class WorkloadTest {

  public static Path miniTrace() throws URISyntaxException {
    return Path.of(WorkloadTest.class.getResource("/mini-trace.jsonl").toURI());
  }

  public static List<TimedRequest> read(Workload w) {
    List<TimedRequest> out = new ArrayList<>();
    w.forEachRemaining(out::add);
    return out;
  }

  @Test
  void mooncakeTrace_expandsHashIdsToSharedTokens() throws Exception {
    List<TimedRequest> trace;
    try (Workload w = Workload.mooncakeTrace(miniTrace(), 32)) {
      trace = read(w);
    }
    assertThat(trace).hasSize(5);
    assertThat(trace).extracting(t -> t.at().toMillis()).containsExactly(0L, 10L, 20L, 30L, 40L);
    assertThat(trace)
        .extracting(t -> t.request().promptLength())
        .containsExactly(64, 80, 40, 64, 100);
    assertThat(trace).extracting(t -> t.request().outputLength()).containsExactly(2, 2, 1, 1, 3);
    int[] first = trace.get(0).request().promptTokens();
    int[] second = trace.get(1).request().promptTokens();
    int[] fifth = trace.get(4).request().promptTokens();
    assertThat(Arrays.copyOf(second, 64)).isEqualTo(first);
    assertThat(trace.get(3).request().promptTokens()).isEqualTo(first);
    assertThat(Arrays.copyOf(fifth, 32)).isEqualTo(Arrays.copyOf(first, 32));
    assertThat(Arrays.copyOfRange(fifth, 32, 64)).isNotEqualTo(Arrays.copyOfRange(first, 32, 64));
    assertThat(trace.get(0).request().outputTokens())
        .isNotEqualTo(trace.get(3).request().outputTokens());
  }

  @Test
  void mooncakeTrace_badLineNamesTheLine(@TempDir Path dir) throws IOException {
    Path bad = dir.resolve("bad.jsonl");
    Files.writeString(
        bad,
        "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n"
            + "{\"timestamp\": 1, \"input_length\": 10}\n");
    try (Workload w = Workload.mooncakeTrace(bad, 512)) {
      w.next();
      assertThatThrownBy(w::next)
          .isInstanceOf(TraceFormatException.class)
          .hasMessageContaining("line 2")
          .hasMessageContaining("output_length");
    }
  }

  @Test
  void synthetic_isDeterministicAndConversationsGrow() {
    SyntheticWorkload.Options options =
        SyntheticWorkload.Options.defaults().withSeed(5).withRate(100);
    List<TimedRequest> a = new ArrayList<>();
    List<TimedRequest> b = new ArrayList<>();
    try (Workload wa = Workload.synthetic(options);
        Workload wb = Workload.synthetic(options)) {
      for (int i = 0; i < 200; i++) {
        a.add(wa.next());
        b.add(wb.next());
      }
    }
    assertThat(a).isEqualTo(b);
    assertThat(a.get(199).at()).isGreaterThan(Duration.ofMillis(500));
    long continued =
        a.stream()
            .filter(
                later ->
                    a.stream()
                        .anyMatch(
                            earlier ->
                                earlier != later
                                    && startsWith(
                                        later.request().promptTokens(), earlier.request())))
            .count();
    assertThat(continued).as("multi-turn requests extend an earlier prompt + answer").isPositive();
  }

  private static boolean startsWith(int[] prompt, InferenceRequest earlier) {
    int[] history = earlier.allTokens();
    return prompt.length > history.length
        && Arrays.equals(Arrays.copyOf(prompt, history.length), history);
  }
}
