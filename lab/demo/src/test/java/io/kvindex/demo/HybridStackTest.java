package io.kvindex.demo;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.Poll;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.ModelKind;
import io.kvindex.simulator.PodRouter;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The demo's stack on hybrid engines, shortly: what two ingesters make of each cache group's events
 * equals the engines' caches, group by group, and the routers answer the hit each engine would
 * compute.
 */
@UsesRedis
class HybridStackTest {

  @Test
  void audit_slidingWindowEngines_indexEqualsEachGroupsTruth(RedisStandalone redis)
      throws Exception {
    audit(ModelKind.SLIDING_WINDOW, redis);
  }

  @Test
  void audit_mambaEngines_indexEqualsEachGroupsTruth(RedisStandalone redis) throws Exception {
    audit(ModelKind.MAMBA, redis);
  }

  private static void audit(ModelKind kind, RedisStandalone redis) throws Exception {
    DemoConfig config =
        DemoConfig.builder()
            .redisUri(redis.uri().toURI().toString())
            .pods(2)
            .modelKind(kind)
            .seed(3)
            .build();
    List<InferenceRequest> requests =
        Workloads.requests(config).stream()
            .limit(150)
            .map(io.kvindex.simulator.load.TimedRequest::request)
            .toList();
    try (Stack stack = Stack.start(config, 1024)) {
      PodRouter roundRobin = PodRouter.roundRobin();
      for (InferenceRequest r : requests) {
        stack.fleet().submit(r, roundRobin);
      }
      Poll.until(
          () ->
              stack.fleet().pods().stream()
                  .allMatch(p -> stack.watermark(p.name()) == p.nextSequence(0) - 1),
          Duration.ofSeconds(30));
      assertThat(
              stack.fleet().pods().stream()
                  .mapToInt(p -> p.cachedGroupBlocks(0).get(1).size())
                  .sum())
          .as("group 1 holds blocks")
          .isPositive();

      Auditor auditor =
          new Auditor(
              stack.auditIndex(),
              stack.auditInspector(),
              new RouterClient(stack.routers()),
              stack.fleet(),
              requests);
      Auditor.Accuracy accuracy = auditor.audit();
      for (int i = 0; i < 50 && !accuracy.perfect(); i++) {
        Thread.sleep(100); // the routers read the recorded layout in the background
        accuracy = auditor.audit();
      }

      assertThat(accuracy.wrongPods()).isEmpty();
      assertThat(accuracy.lookups().right())
          .as("%s", accuracy.lookups().firstWrong())
          .isEqualTo(accuracy.lookups().sampled());
    }
  }
}
