package io.kvindex.demo;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.simulator.InferenceRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class WorkloadsTest {
  @TempDir Path dir;

  private static InferenceRequest request(int promptTokens, int outputTokens) {
    return InferenceRequest.of(new int[promptTokens], new int[outputTokens]);
  }

  @Test
  void capacityBlocks_builtInWorkload_theConfiguredOne() {
    DemoConfig config = DemoConfig.builder().build();

    assertThat(Workloads.capacityBlocks(config, List.of(request(2_000, 200)))).isEqualTo(1024);
  }

  /**
   * Conversation prompts of 12 000 tokens: a pod keeps the many sessions it serves at once, not 4
   * of the largest request (3 004 blocks here), which made the pods evict about half of every
   * prompt they computed.
   */
  @Test
  void capacityBlocks_traceOfConversationPrompts_aGpuOfKvCache() throws Exception {
    DemoConfig config =
        DemoConfig.builder().trace(Files.writeString(dir.resolve("t.jsonl"), "")).build();

    assertThat(Workloads.capacityBlocks(config, List.of(request(12_000, 10), request(11_500, 300))))
        .isEqualTo(Workloads.TRACE_CAPACITY_BLOCKS)
        .isEqualTo(32_768);
  }

  /** A trace with a 191 378-token request (as the public FAST'25 one has): 4 of it. */
  @Test
  void capacityBlocks_traceWithAHugeRequest_fourOfIt() throws Exception {
    DemoConfig config =
        DemoConfig.builder().trace(Files.writeString(dir.resolve("t.jsonl"), "")).build();

    assertThat(Workloads.capacityBlocks(config, List.of(request(191_378, 6))))
        .isEqualTo(4 * (191_384 / 16 + 1));
  }
}
