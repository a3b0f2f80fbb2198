package io.kvindex.simulator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.simulator.engine.EngineTiming;
import io.kvindex.simulator.engine.StepScheduler;
import io.kvindex.simulator.engine.StepScheduler.Step;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The timed scheduler step by step. Step costs are binary fractions (fixed 1, 1/4 per prefill
 * token, 1/8 per decoding sequence), so every expected time is exact.
 */
class StepSchedulerTest {
  private static final int BLOCK = 4;

  private final List<Step> steps = new ArrayList<>();
  private final List<TimedCompletion> done = new ArrayList<>();

  private static EngineTiming timing(int maxSeqs, int maxTokens) {
    return new EngineTiming(maxSeqs, maxTokens, 1.0, 0.25, 0.125);
  }

  private static DefaultSimulatedPod pod(int capacity, Recorder recorder) {
    DefaultSimulatedPod pod =
        TestPods.start(
            TestPods.config()
                .capacityBlocks(capacity)
                .blockSize(BLOCK)
                .hashMode(HashMode.RANDOM)
                .build());
    pod.addListener(recorder);
    return pod;
  }

  private StepScheduler scheduler(SimulatedPod pod, EngineTiming timing) {
    return pod.scheduler(0, timing).onStep(steps::add);
  }

  /** Runs every step to the end. */
  private static void drain(StepScheduler s) {
    while (!Double.isNaN(s.stepEnd())) {
      s.finishStep();
    }
  }

  @Test
  void chunkedPrefillThenOneDecodeStepPerToken() {
    Recorder rec = new Recorder();
    try (DefaultSimulatedPod pod = pod(16, rec)) {
      StepScheduler s = scheduler(pod, timing(4, 4));
      s.add(TestPods.request(1, 10, 3), 0, done::add);
      drain(s);

      assertThat(steps)
          .containsExactly(
              new Step(0, 2.0, 4, 0, 1, 0, 0),
              new Step(2.0, 2.0, 4, 0, 1, 0, 0),
              new Step(4.0, 1.5, 2, 0, 1, 0, 0),
              new Step(5.5, 1.125, 0, 1, 1, 0, 0),
              new Step(6.625, 1.125, 0, 1, 1, 0, 0));
      TimedCompletion c = done.get(0);
      assertThat(c.ttft()).isEqualTo(5.5);
      assertThat(c.endToEnd()).isEqualTo(7.75);
      assertThat(c.cachedTokens()).isZero();
      assertThat(c.outputTokens()).isEqualTo(3);
      // A batch per step that fills a block: blocks 0 and 1 in the prefill chunks, block 2 (the
      // prompt's last 2 tokens and the first 2 generated) in the second decode step.
      assertThat(rec.batches).hasSize(3);
      assertThat(rec.batches)
          .allSatisfy(b -> assertThat(((BlockStored) b.events().get(0)).blockHashes()).hasSize(1));
      assertThat(rec.applied("GPU")).isEqualTo(pod.cachedBlocks(0, "GPU"));
    }
  }

  @Test
  void prefixHitSkipsItsPrefillCost() {
    Recorder rec = new Recorder();
    try (DefaultSimulatedPod pod = pod(16, rec)) {
      StepScheduler s = scheduler(pod, timing(4, 4));
      InferenceRequest r = TestPods.request(1, 10, 1);
      s.add(r, 0, done::add);
      drain(s);
      steps.clear();
      s.add(r, 10, done::add);
      drain(s);

      // Blocks 0 and 1 are hits: only the prompt's last 2 tokens are computed.
      assertThat(steps).containsExactly(new Step(10, 1.5, 2, 0, 1, 0, 0));
      assertThat(done.get(1).cachedTokens()).isEqualTo(8);
      assertThat(done.get(1).ttft()).isEqualTo(1.5);
    }
  }

  @Test
  void aRequestArrivingDuringAStepJoinsTheNextOneInTheSameBatch() {
    Recorder rec = new Recorder();
    try (DefaultSimulatedPod pod = pod(16, rec)) {
      StepScheduler s = scheduler(pod, timing(2, 8));
      s.add(TestPods.request(1, 4, 2), 0, done::add);
      s.add(TestPods.request(2, 4, 2), 0.5, done::add);
      drain(s);

      assertThat(steps)
          .containsExactly(
              new Step(0, 2.0, 4, 0, 1, 0, 0),
              // the first request decodes while the second one's prompt is computed
              new Step(2.0, 2.125, 4, 1, 2, 0, 0),
              new Step(4.125, 1.125, 0, 1, 1, 0, 0));
      assertThat(done).extracting(TimedCompletion::ttft).containsExactly(2.0, 3.625);
      assertThat(done).extracting(TimedCompletion::finished).containsExactly(4.125, 5.25);
      // one batch per step that stored a block: the second request's block 0 went out with the
      // first one's decode step
      List<KvEvent> second = rec.batches.get(1).events();
      assertThat(second).hasSize(1);
    }
  }

  @Test
  void maxNumSeqsKeepsTheSecondRequestWaiting() {
    Recorder rec = new Recorder();
    try (DefaultSimulatedPod pod = pod(16, rec)) {
      StepScheduler s = scheduler(pod, timing(1, 8));
      s.add(TestPods.request(1, 4, 2), 0, done::add);
      s.add(TestPods.request(2, 4, 2), 0, done::add);
      assertThat(s.queued()).isEqualTo(2);
      drain(s);

      assertThat(steps)
          .containsExactly(
              new Step(0, 2.0, 4, 0, 1, 0, 0),
              new Step(2.0, 1.125, 0, 1, 1, 1, 0),
              new Step(3.125, 2.0, 4, 0, 1, 0, 0),
              new Step(5.125, 1.125, 0, 1, 1, 0, 0));
      assertThat(done).extracting(TimedCompletion::ttft).containsExactly(2.0, 5.125);
    }
  }

  @Test
  void aFullCachePreemptsTheLastRunningRequestWhichResumesFromItsOwnBlocks() {
    Recorder rec = new Recorder();
    try (DefaultSimulatedPod pod = pod(4, rec)) {
      StepScheduler s = scheduler(pod, timing(2, 16));
      // A needs 3 of the 4 blocks by its end, B 3 too: both cannot finish together.
      s.add(TestPods.request(1, 8, 5), 0, done::add);
      s.add(TestPods.request(2, 4, 6), 0, done::add);
      drain(s);

      assertThat(steps)
          .containsExactly(
              new Step(0, 3.0, 8, 0, 1, 0, 0),
              new Step(3.0, 2.125, 4, 1, 2, 0, 0),
              // B's second block does not fit: B, the last running, is preempted
              new Step(5.125, 1.125, 0, 1, 1, 1, 1),
              // B's own block 0 is a hit but needs its slot back plus a new one: not yet
              new Step(6.25, 1.125, 0, 1, 1, 1, 0),
              new Step(7.375, 1.125, 0, 1, 1, 1, 0),
              // A is done; B resumes from its cached block 0 and recomputes one token
              new Step(8.5, 1.25, 1, 0, 1, 0, 0),
              new Step(9.75, 1.125, 0, 1, 1, 0, 0),
              new Step(10.875, 1.125, 0, 1, 1, 0, 0),
              new Step(12.0, 1.125, 0, 1, 1, 0, 0),
              new Step(13.125, 1.125, 0, 1, 1, 0, 0));
      assertThat(s.preemptions()).isEqualTo(1);
      TimedCompletion b = done.get(1);
      assertThat(b.preemptions()).isEqualTo(1);
      assertThat(b.ttft()).isEqualTo(5.125);
      assertThat(b.finished()).isEqualTo(14.25);
      assertThat(b.cachedTokens()).isZero();
      assertThat(done.get(0).finished()).isEqualTo(8.5);
      assertThat(rec.applied("GPU")).isEqualTo(pod.cachedBlocks(0, "GPU"));
    }
  }

  @Test
  void aRequestTooLargeForTheCacheIsRefusedAtOnce() {
    try (DefaultSimulatedPod pod = pod(2, new Recorder())) {
      StepScheduler s = scheduler(pod, timing(2, 16));
      assertThatThrownBy(() -> s.add(TestPods.request(1, 12, 2), 0, done::add))
          .isInstanceOf(RequestTooLargeException.class)
          .hasMessageContaining("needs 4 KV blocks");
      assertThat(s.queued()).isZero();
    }
  }

  @Test
  void aRestartAbortsTheRequestsInFlight() {
    try (DefaultSimulatedPod pod = pod(16, new Recorder())) {
      StepScheduler s = scheduler(pod, timing(2, 4));
      s.add(TestPods.request(1, 12, 2), 0, done::add);
      pod.restart();
      s.finishStep();

      assertThat(done).hasSize(1);
      assertThat(done.get(0).firstToken()).isNaN();
      assertThat(s.queued()).isZero();
      assertThat(s.stepEnd()).isNaN();
    }
  }

  @Test
  void timingRejectsNonsense() {
    assertThatThrownBy(() -> new EngineTiming(0, 8, 0, 0, 0))
        .hasMessageContaining("maxNumSeqs must be >= 1");
    assertThatThrownBy(() -> new EngineTiming(1, 8, -1, 0, 0))
        .hasMessageContaining("step costs must be >= 0");
  }
}
