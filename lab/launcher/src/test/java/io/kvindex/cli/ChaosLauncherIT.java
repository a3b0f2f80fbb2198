package io.kvindex.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs {@code scripts/kvindex chaos --quick} (its representative scenarios) through the real
 * launcher (its own Redis, ingesters, routers and simulated pods) and checks what the JSON must say
 * whatever the machine's speed: lookups were audited, nothing was lost, the index is exact once the
 * fault is over, and a poison batch is purged exactly once. The false-positive windows depend on
 * timing and are reported, not asserted, so the phases are shortened ({@code --phases 1,1,2}
 * instead of 4,4,5 s): each scenario still loads the stack, injects its whole fault (those with a
 * length of their own, a 5 s pause or a lease's expiry, keep it) and audits under load and at
 * quiescence; only the time the auditor samples around the fault is shorter.
 */
class ChaosLauncherIT {
  @TempDir Path dir;

  @Test
  @Timeout(value = 8, unit = TimeUnit.MINUTES) // eight scenarios, each with its own stack
  void chaosQuick_everyScenario_exactAtQuiescenceAndNothingLost() throws Exception {
    Path out = dir.resolve("chaos.json");

    Launcher.Result result =
        Launcher.run(
            Duration.ofMinutes(7),
            dir,
            "chaos",
            "--quick",
            "--phases",
            "1,1,2",
            "--out",
            out.toString());

    assertThat(result.exitCode()).as(result.err()).isZero();
    JsonNode json = new ObjectMapper().readTree(out.toFile());
    assertThat(json.path("command").asText()).isEqualTo("chaos --quick --phases 1,1,2");
    assertThat(json.path("setup").path("warm_s").asInt()).isEqualTo(1);
    JsonNode scenarios = json.path("scenarios");
    assertThat(scenarios).hasSizeGreaterThanOrEqualTo(8);
    JsonNode poison = null;
    for (JsonNode s : scenarios) {
      String name = s.path("scenario").asText();
      if (name.equals("poison-batch")) {
        poison = s;
      }
      assertThat(s.has("failed_to_run")).as(name + ": " + s.path("failed_to_run")).isFalse();
      assertThat(s.path("lookups_checked").asLong()).as(name + " lookups checked").isPositive();
      assertThat(s.path("batches_lost").asLong()).as(name + " batches lost").isZero();
      assertThat(s.path("real_errors_surfaced").asLong()).as(name + " real errors").isZero();
      assertThat(s.path("quiescence_pods_exact_pct").asDouble())
          .as(name + " pods exact at quiescence: " + s.path("quiescence_wrong_pods"))
          .isEqualTo(100.0);
      assertThat(s.path("quiescence_lookups_exact_pct").asDouble()).isEqualTo(100.0);
      for (String goal :
          List.of("accuracy_100pct_at_quiescence", "no_batch_lost_without_a_purge")) {
        assertThat(s.path("goals").path(goal).asBoolean()).as(name + " " + goal).isTrue();
      }
    }
    assertThat(poison).as("the quick set has the poison batch").isNotNull();
    assertThat(poison.path("purges").path("batch_rejected").asLong())
        .as("the poison batch is rejected, and its stream purged, once")
        .isEqualTo(1);
  }
}
