package io.kvindex.simulator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class SimulatedPodCacheTest {

  private static DefaultSimulatedPod pod(int capacity, int blockSize, int cpu, Recorder recorder) {
    DefaultSimulatedPod pod =
        TestPods.start(
            TestPods.config()
                .capacityBlocks(capacity)
                .blockSize(blockSize)
                .cpuCapacityBlocks(cpu)
                .hashMode(HashMode.RANDOM)
                .build());
    pod.addListener(recorder);
    return pod;
  }

  @Test
  void submit_storesFullPromptBlocksInOneEvent() {
    Recorder rec = new Recorder();
    try (DefaultSimulatedPod pod = pod(8, 4, 0, rec)) {
      Completion c = pod.submit(TestPods.request(1, 18, 1));

      assertThat(c.cachedTokens()).isZero();
      assertThat(c.promptTokens()).isEqualTo(18);
      assertThat(rec.seqs).containsExactly(0L);
      BlockStored s = (BlockStored) rec.lastEvents().get(0);
      assertThat(s.blockHashes()).hasSize(4);
      assertThat(s.parentBlockHash()).isNull();
      assertThat(s.blockSize()).isEqualTo(4);
      assertThat(s.medium()).isEqualTo("GPU");
      assertThat(s.tokenIds())
          .containsExactlyElementsOf(Arrays.stream(TestPods.tokens(1, 16)).boxed().toList());
      assertThat(pod.cachedBlocks(0, "GPU")).containsExactlyInAnyOrderElementsOf(s.blockHashes());
    }
  }

  @Test
  void submit_repeatedPromptHitsAllButTheLastToken() {
    Recorder rec = new Recorder();
    try (DefaultSimulatedPod pod = pod(16, 4, 0, rec)) {
      InferenceRequest r = TestPods.request(1, 16, 1);
      pod.submit(r);
      Completion again = pod.submit(r);

      assertThat(again.cachedTokens()).isEqualTo(12);
      assertThat(rec.size()).as("the recomputed last block is not stored twice").isEqualTo(1);
    }
  }

  @Test
  void submit_decodeBlocksAreStoredOneStepAtATimeWithTheirParent() {
    Recorder rec = new Recorder();
    try (DefaultSimulatedPod pod = pod(16, 4, 0, rec)) {
      pod.submit(TestPods.request(1, 8, 9));

      // prefill stores 2 blocks; tokens 9..16 computed over decode steps fill blocks 2 and 3
      assertThat(rec.size()).isEqualTo(3);
      BlockStored prefill = (BlockStored) rec.batches.get(0).events().get(0);
      BlockStored d1 = (BlockStored) rec.batches.get(1).events().get(0);
      BlockStored d2 = (BlockStored) rec.batches.get(2).events().get(0);
      assertThat(d1.blockHashes()).hasSize(1);
      assertThat(d1.parentBlockHash()).isEqualTo(prefill.blockHashes().get(1));
      assertThat(d2.parentBlockHash()).isEqualTo(d1.blockHashes().get(0));
    }
  }

  @Test
  void submit_fullCacheEvictsTheLeastRecentlyUsedTailFirst() {
    Recorder rec = new Recorder();
    try (DefaultSimulatedPod pod = pod(8, 4, 0, rec)) {
      pod.submit(TestPods.request(1, 16, 1));
      List<Long> a = ((BlockStored) rec.lastEvents().get(0)).blockHashes();
      pod.submit(TestPods.request(2, 16, 1));
      pod.submit(TestPods.request(3, 8, 1));

      List<KvEvent> events = rec.lastEvents();
      assertThat(events)
          .startsWith(
              new BlockRemoved(List.of(a.get(3)), "GPU", 0),
              new BlockRemoved(List.of(a.get(2)), "GPU", 0));
      assertThat(events.get(2)).isInstanceOf(BlockStored.class);
      assertThat(pod.cachedBlocks(0, "GPU")).contains(a.get(0), a.get(1));
      assertThat(pod.cachedBlocks(0, "GPU")).doesNotContain(a.get(2), a.get(3));
    }
  }

  @Test
  void submit_hitBlocksAreProtectedAndRefreshed() {
    Recorder rec = new Recorder();
    try (DefaultSimulatedPod pod = pod(8, 4, 0, rec)) {
      InferenceRequest a = TestPods.request(1, 17, 1);
      pod.submit(a);
      pod.submit(TestPods.request(2, 16, 1));
      Completion hit = pod.submit(a);
      pod.submit(TestPods.request(3, 16, 1));

      assertThat(hit.cachedTokens()).isEqualTo(16);
      assertThat(pod.submit(a).cachedTokens()).isEqualTo(16);
    }
  }

  @Test
  void submit_requestLargerThanTheCacheIsRejected() {
    try (DefaultSimulatedPod pod = pod(4, 4, 0, new Recorder())) {
      assertThatThrownBy(() -> pod.submit(TestPods.request(1, 17, 1)))
          .isInstanceOf(RequestTooLargeException.class)
          .hasMessageContaining("needs 5 KV blocks");
    }
  }

  @Test
  void submit_randomWorkloadGroundTruthMatchesEmittedEvents() {
    Recorder rec = new Recorder();
    Random random = new Random(7);
    try (DefaultSimulatedPod pod = pod(64, 4, 32, rec)) {
      int[][] prefixes = new int[6][];
      for (int i = 0; i < prefixes.length; i++) {
        prefixes[i] = TestPods.tokens(100 + i, 4 * (1 + random.nextInt(6)));
      }
      long cachedTokens = 0;
      for (int i = 0; i < 400; i++) {
        int[] prefix = prefixes[random.nextInt(prefixes.length)];
        int[] suffix = TestPods.tokens(random.nextLong(), random.nextInt(30));
        int[] prompt = Arrays.copyOf(prefix, prefix.length + suffix.length);
        System.arraycopy(suffix, 0, prompt, prefix.length, suffix.length);
        cachedTokens +=
            pod.submit(InferenceRequest.of(prompt, TestPods.tokens(i, 1 + random.nextInt(12))))
                .cachedTokens();
        if (i % 97 == 0) {
          pod.resetPrefixCache();
        }
        if (rec.size() > 0 && pod.config().hashMode() == HashMode.RANDOM && i % 97 != 0) {
          assertThat(rec.applied("GPU")).isEqualTo(pod.cachedBlocks(0, "GPU"));
          assertThat(rec.applied("CPU")).isEqualTo(pod.cachedBlocks(0, "CPU"));
        }
      }
      assertThat(cachedTokens).as("prompt tokens served from cache").isPositive();
      assertThat(rec.applied("CPU")).isNotEmpty();
    }
  }

  @Test
  void submit_cpuTierTakesEvictedBlocksAndServesHits() {
    Recorder rec = new Recorder();
    try (DefaultSimulatedPod pod = pod(5, 4, 16, rec)) {
      InferenceRequest a = TestPods.request(1, 17, 1);
      pod.submit(a);
      List<Long> aHashes = ((BlockStored) rec.lastEvents().get(0)).blockHashes();
      pod.submit(TestPods.request(2, 20, 1));

      assertThat(pod.cachedBlocks(0, "CPU")).containsAll(aHashes);
      BlockStored cpuStore =
          rec.lastEvents().stream()
              .filter(e -> e instanceof BlockStored s && "CPU".equals(s.medium()))
              .map(BlockStored.class::cast)
              .findFirst()
              .orElseThrow();
      assertThat(cpuStore.blockSize()).isZero();
      assertThat(cpuStore.tokenIds()).isEmpty();
      assertThat(pod.submit(a).cachedTokens()).isEqualTo(16);
      assertThat(pod.cachedBlocks(0, "GPU")).containsAll(aHashes);
    }
  }

  @Test
  void resetPrefixCache_clearsAtOnceAndSendsAllBlocksClearedWithTheNextStep() {
    Recorder rec = new Recorder();
    try (DefaultSimulatedPod pod = pod(16, 4, 0, rec)) {
      pod.submit(TestPods.request(1, 16, 1));

      assertThat(pod.resetPrefixCache()).isTrue();
      assertThat(pod.cachedBlocks(0, "GPU")).isEmpty();
      assertThat(rec.size()).isEqualTo(1);

      pod.submit(TestPods.request(2, 8, 1));
      assertThat(rec.lastEvents().get(0)).isEqualTo(AllBlocksCleared.INSTANCE);
      assertThat(rec.lastEvents().get(1)).isInstanceOf(BlockStored.class);
      assertThat(rec.applied("GPU")).isEqualTo(pod.cachedBlocks(0, "GPU"));
    }
  }

  @Test
  void sleep_rejectsRequestsAndClearsWhenWokenUp() {
    Recorder rec = new Recorder();
    try (DefaultSimulatedPod pod = pod(16, 4, 0, rec)) {
      InferenceRequest a = TestPods.request(1, 16, 1);
      pod.submit(a);
      pod.sleep(2);

      assertThat(pod.isSleeping()).isTrue();
      assertThat(pod.sleepLevel()).isEqualTo(2);
      assertThat(pod.cachedBlocks(0, "GPU")).isEmpty();
      assertThatThrownBy(() -> pod.submit(a)).isInstanceOf(PodUnavailableException.class);

      pod.wakeUp();
      assertThat(rec.size()).as("nothing is published until a step runs").isEqualTo(1);
      assertThat(pod.submit(a).cachedTokens()).isZero();
      assertThat(rec.lastEvents().get(0)).isEqualTo(AllBlocksCleared.INSTANCE);
    }
  }

  @Test
  void sleep_levelZeroPausesWithoutClearing() {
    Recorder rec = new Recorder();
    try (DefaultSimulatedPod pod = pod(16, 4, 0, rec)) {
      InferenceRequest a = TestPods.request(1, 16, 1);
      pod.submit(a);
      pod.sleep(0);
      pod.wakeUp();

      assertThat(pod.submit(a).cachedTokens()).isEqualTo(12);
    }
  }

  @Test
  void restart_emptiesTheCacheAndRestartsTheSequenceWithoutAllBlocksCleared() {
    Recorder rec = new Recorder();
    AtomicReference<Instant> now = new AtomicReference<>(Instant.ofEpochSecond(1_000));
    InstantSource clock = now::get;
    try (DefaultSimulatedPod pod =
        TestPods.start(TestPods.config().capacityBlocks(16).blockSize(4).clock(clock).build())) {
      pod.addListener(rec);
      InferenceRequest a = TestPods.request(1, 16, 1);
      pod.submit(a);
      pod.submit(TestPods.request(2, 16, 1));
      assertThat(pod.nextSequence(0)).isEqualTo(2);
      now.set(Instant.ofEpochSecond(2_000));

      pod.restart();

      assertThat(pod.nextSequence(0)).isZero();
      assertThat(pod.cachedBlocks(0, "GPU")).isEmpty();
      assertThat(pod.processStartTime()).isEqualTo(Instant.ofEpochSecond(2_000));
      assertThat(pod.submit(a).cachedTokens()).isZero();
      assertThat(rec.seqs).containsExactly(0L, 1L, 0L);
      assertThat(rec.lastEvents()).noneMatch(e -> e instanceof AllBlocksCleared);
    }
  }

  @Test
  void restart_randomHashModeChangesTheHashes() {
    Recorder rec = new Recorder();
    try (DefaultSimulatedPod pod = pod(16, 4, 0, rec)) {
      InferenceRequest a = TestPods.request(1, 16, 1);
      pod.submit(a);
      List<Long> before = ((BlockStored) rec.lastEvents().get(0)).blockHashes();
      pod.restart();
      pod.submit(a);
      List<Long> after = ((BlockStored) rec.lastEvents().get(0)).blockHashes();

      assertThat(after).doesNotContainAnyElementsOf(before);
    }
  }

  @Test
  void submit_dataParallelRanksAreSeparateEngines() {
    try (DefaultSimulatedPod pod =
        TestPods.start(
            TestPods.config().capacityBlocks(16).blockSize(4).dataParallelSize(3).build())) {
      InferenceRequest a = TestPods.request(1, 16, 1);
      assertThat(pod.submit(a).rank()).isZero();
      assertThat(pod.submit(a).rank()).isEqualTo(1);
      assertThat(pod.submit(a, 0).cachedTokens()).isEqualTo(12);

      assertThat(pod.nextSequence(0)).isEqualTo(1);
      assertThat(pod.nextSequence(1)).isEqualTo(1);
      assertThat(pod.nextSequence(2)).isZero();
      int port = TcpEndpoint.port(pod.endpoints().get(0).publish());
      assertThat(pod.endpoints())
          .extracting(e -> TcpEndpoint.port(e.publish()))
          .containsExactly(port, port + 1, port + 2);
      int replay = TcpEndpoint.port(pod.endpoints().get(0).replay());
      assertThat(TcpEndpoint.port(pod.endpoints().get(2).replay())).isEqualTo(replay + 2);
    }
  }
}
