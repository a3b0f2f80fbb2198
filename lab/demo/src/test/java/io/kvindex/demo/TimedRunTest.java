package io.kvindex.demo;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.router.PickPolicy;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.TimedCompletion;
import io.kvindex.simulator.engine.EngineTiming;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Policies on engines that take time, in simulated time (no wall clock): step costs are binary
 * fractions (fixed 1 s, 1/64 s per prefill token, 1/8 s per decoding sequence), so every expected
 * time is exact.
 */
class TimedRunTest {
  private static final EngineTiming TIMING = new EngineTiming(4, 64, 1.0, 1.0 / 64, 0.125);
  private static final DemoConfig CONFIG = DemoConfig.builder().pods(2).build();

  private static InferenceRequest request(long seed) {
    Random r = new Random(seed);
    int[] prompt = new int[64];
    for (int i = 0; i < prompt.length; i++) {
      prompt[i] = r.nextInt(32_000);
    }
    return InferenceRequest.of(prompt, new int[] {1, 2});
  }

  private static TimedRun.Result run(
      List<InferenceRequest> requests, double[] arrivals, int gateways, TimedRun.Picker picker) {
    try (Fleet fleet = Fleet.start(CONFIG, 64, false)) {
      return new TimedRun(requests, arrivals, fleet, TIMING, gateways, picker).execute();
    }
  }

  @Test
  void aRepeatedPromptOnAColdPodPaysItsWholePrefill() {
    InferenceRequest r = request(1);
    TimedRun.Result result =
        run(List.of(r, r), new double[] {0, 10}, 1, TimedPolicies.roundRobin());

    assertThat(result.done()).extracting(TimedCompletion::pod).containsExactly("pod-0", "pod-1");
    // one step of 64 prompt tokens: 1 + 64/64
    assertThat(result.done()).extracting(TimedCompletion::ttft).containsExactly(2.0, 2.0);
    assertThat(result.hitRate()).isZero();
    assertThat(result.loadSpread()).isEqualTo(1.0);
    assertThat(result.maxLateSeconds()).isNaN();
  }

  @Test
  void theOracleSendsItWhereItIsCachedAndSkipsThatPrefill() {
    InferenceRequest r = request(1);
    for (TimedRun.Picker picker :
        List.of(
            TimedPolicies.oracle(PickPolicy.standard()),
            TimedPolicies.oracle(PickPolicy.estimatedTtft()),
            TimedPolicies.approximatePrefix(1, 64, 0.5, 32, 1.5))) {
      TimedRun.Result result = run(List.of(r, r), new double[] {0, 10}, 1, picker);

      TimedCompletion second = result.done()[1];
      assertThat(second.pod()).isEqualTo(result.done()[0].pod());
      // 3 of the 4 prompt blocks are hits (the last token is always computed): 1 + 16/64
      assertThat(second.cachedTokens()).isEqualTo(48);
      assertThat(second.ttft()).isEqualTo(1.25);
      assertThat(result.loadSpread()).isEqualTo(2.0);
    }
  }

  @Test
  void leastLoadedSeesTheTrueQueue() {
    TimedRun.Result result =
        run(
            List.of(request(1), request(2), request(3)),
            new double[] {0, 0.5, 0.75},
            1,
            TimedPolicies.leastLoaded());

    assertThat(result.done())
        .extracting(TimedCompletion::pod)
        .containsExactly("pod-0", "pod-1", "pod-0");
    // the third waits for the first's prefill step (ends at 2), then shares the next step's 64
    // tokens with the first's decode (63 of its prompt), and computes its last one after that
    assertThat(result.done()[2].firstToken())
        .isEqualTo(2.0 + (1 + 63.0 / 64 + 0.125) + (1 + 1.0 / 64));
  }

  @Test
  void perGatewayMemoryDoesNotSeeWhatOtherGatewaysSent() {
    InferenceRequest r = request(1);
    // Two gateways take turns: the second never sent r anywhere, so it goes to its least loaded
    // pod (its first candidate) rather than where the first gateway sent r.
    TimedRun.Result result =
        run(
            List.of(request(2), r, r),
            new double[] {0, 5, 10},
            2,
            TimedPolicies.approximatePrefix(2, 64, 0.5, 32, 1.5));

    assertThat(result.done())
        .extracting(TimedCompletion::pod)
        .containsExactly("pod-0", "pod-0", "pod-0");
    assertThat(result.reasons()).containsEntry("least_load", 3);
  }
}
