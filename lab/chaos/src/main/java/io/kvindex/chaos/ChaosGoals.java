package io.kvindex.chaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.index.ClosedLoopStore;
import java.util.List;

/**
 * The goals a chaos scenario's figures must meet, written beside them in its result: what holds for
 * every scenario and what each fault adds. Stateless, so thread-safe.
 */
final class ChaosGoals {
  /** A non-strict scenario's false positives must end this soon after the fault. */
  static final long FALSE_POSITIVES_END_WITHIN_MS = 2000;

  private ChaosGoals() {}

  /** Adds the scenario's goals and whether each was met; returns whether all were. */
  static boolean check(ChaosScenario scenario, ObjectNode r) {
    ObjectNode goals = r.putObject("goals");
    if (scenario.strict) {
      goals.put("no_false_positive_at_any_time", r.path("false_positives").asLong() == 0);
      // Late is not wrong: a removal still on its way (ingest lag past the grace, which a starved
      // machine produces) is told apart; the index must never credit a removal it applied.
      goals.put(
          "no_false_positive_but_ingest_lag",
          r.path("false_positives").asLong()
                  - r.path("false_positives_while_ingest_behind").asLong()
              == 0);
    } else {
      goals.put(
          "false_positives_end_within_2s_of_the_fault",
          r.path("last_false_positive_after_fault_end_ms").asLong()
              <= FALSE_POSITIVES_END_WITHIN_MS);
    }
    goals.put(
        "accuracy_100pct_at_quiescence",
        r.path("quiescence_pods_exact_pct").asDouble() == 100
            && r.path("quiescence_lookups_exact_pct").asDouble() == 100);
    goals.put("no_batch_lost_without_a_purge", r.path("batches_lost").asLong() == 0);
    if (r.has("demo_exit_code")) {
      goals.put("demo_reports_and_exits_0", r.path("demo_exit_code").asInt(-1) == 0);
      goals.put(
          "demo_keys_deleted_from_the_live_primaries",
          !r.has("demo_cleanup_problem")
              && r.path("keys_left_on_the_live_primaries").asLong() == 0);
    }
    if (scenario == ChaosScenario.SLOW_METRICS) {
      JsonNode fault = r.path("fault");
      long bound = fault.path("bound_ms").asLong();
      goals.put("the_stalled_page_timed_out", fault.path("scrapes_timed_out").asLong() > 0);
      goals.put(
          "sleep_and_restart_purged_within_a_scrape_timeout_and_an_interval",
          within(fault.path("sleep_purged_after_ms"), bound)
              && within(fault.path("restart_purged_after_ms"), bound));
      goals.put(
          "the_stalled_pod_not_purged",
          !fault.path("stalled_pod_purged_as_unreachable").asBoolean());
    }
    if (scenario == ChaosScenario.TOUCH_FLOOD) {
      touchFloodGoals(r.path("fault"), goals);
    }
    if (scenario == ChaosScenario.SLOT_MIGRATION) {
      JsonNode fault = r.path("fault");
      goals.put(
          "the_slot_moved_with_its_keys",
          fault.path("keys_moved").asLong() > 0
              && fault.path("owner_after").asText().equals(fault.path("to").asText()));
      goals.put(
          "the_migration_not_taken_for_a_loss",
          fault.has("index_resets_until_quiescence")
              && fault.path("index_resets_until_quiescence").asLong() == 0
              && fault.path("index_reset_purges_until_quiescence").asLong() == 0);
    }
    if (scenario == ChaosScenario.WORST_SCORE) {
      worstScoreGoals(r.path("fault"), goals);
    }
    JsonNode heap = r.path("heap");
    if (!heap.isMissingNode()) {
      goals.put(
          "no_out_of_memory",
          !heap.path("out_of_memory").asBoolean()
              && heap.path("ingester_alive_at_end").asBoolean());
      goals.put(
          "memory_counted_within_the_budget",
          heap.path("memory_budget_peak_bytes").asLong()
              <= heap.path("memory_budget_bytes").asLong());
    }
    boolean all = true;
    for (JsonNode met : goals) {
      all &= met.asBoolean();
    }
    r.put("goals_met", all);
    return all;
  }

  /** Redis memory a touch flood may add: two byte caps per pod (entries' own overhead included). */
  static final long TOUCH_FLOOD_MEMORY_PER_POD = 2L * ClosedLoopStore.MAX_TOUCH_BYTES;

  /** What a touch flood may leave in Redis once the streams are read, and what made-up pods may. */
  static final long MEMORY_LEFT_BYTES = 2 << 20;

  private static void touchFloodGoals(JsonNode fault, ObjectNode goals) {
    long cap = fault.path("touch_stream_byte_cap").asLong();
    boolean within = true;
    long entries = 0;
    for (JsonNode bytes : fault.path("touch_stream_bytes_max")) {
      within &= bytes.asLong() <= cap;
    }
    for (JsonNode n : fault.path("touch_stream_entries_max")) {
      entries += n.asLong();
    }
    int pods = fault.path("touch_stream_bytes_max").size();
    goals.put("the_flood_reached_the_touch_streams", entries > 0);
    goals.put("every_touch_stream_within_its_byte_cap", pods > 0 && within);
    goals.put(
        "touch_streams_emptied_by_their_readers",
        fault.path("touch_streams_empty_after_ms").asLong(-1) >= 0);
    goals.put(
        "redis_memory_bounded",
        fault.path("redis_used_memory_peak_growth_bytes").asLong()
                <= pods * TOUCH_FLOOD_MEMORY_PER_POD
            && fault.path("redis_used_memory_growth_after_drain_bytes").asLong()
                <= MEMORY_LEFT_BYTES);
  }

  private static void worstScoreGoals(JsonNode fault, ObjectNode goals) {
    JsonNode worst = fault.path("worst_requests");
    goals.put(
        "a_route_asked_for_every_candidate",
        worst.path("candidates").asLong() > 0
            && worst.path("route_calls_answered_with_a_pick").asLong()
                == worst.path("candidates").asLong());
    goals.put(
        "every_worst_request_answered",
        worst.path("calls").asLong() > 0
            && worst.path("answered_200").asLong() == worst.path("calls").asLong());
    JsonNode alone = fault.path("worst_request_alone");
    boolean withinAMillisecond = alone.size() > 1;
    for (String command : List.of("blocks_hmget", "routes_hmget", "speculate_script")) {
      withinAMillisecond &=
          alone.path(command).path("calls").asLong() > 0
              && alone.path(command).path("median_micros").asLong() <= WorstScore.SLOW_MICROS;
    }
    goals.put("worst_request_commands_within_1ms_each_median", withinAMillisecond);
    goals.put(
        "redis_memory_bounded_over_made_up_pods",
        fault.path("made_up_pod_calls").asLong() > 0
            && fault.path("made_up_pod_calls_answered_200").asLong()
                == fault.path("made_up_pod_calls").asLong()
            && fault.path("redis_used_memory_growth_over_made_up_rounds_bytes").asLong()
                <= MEMORY_LEFT_BYTES);
  }

  private static boolean within(JsonNode millis, long bound) {
    return millis.isNumber() && millis.asLong() >= 0 && millis.asLong() <= bound;
  }
}
