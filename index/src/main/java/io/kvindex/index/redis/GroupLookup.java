package io.kvindex.index.redis;

import io.kvindex.index.PodMatch;
import io.kvindex.index.redis.LookupPlanner.HeadRead;
import io.kvindex.index.redis.LookupPlanner.Step;
import io.kvindex.index.redis.RedisLookups.HeadReply;
import io.lettuce.core.KeyValue;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * One group's part of one lookup, its I/O: a loop of turns, each asking the {@link LookupPlanner}
 * which read comes next, making that one read and handing the reply back, until the planner
 * answers. Not thread-safe: its turns run one after another.
 */
final class GroupLookup {
  private final RedisLookups ctx;
  private final GroupState state;
  private final CandidateGroup group;
  private final LookupPlanner planner;

  /** Where the replies' continuations run. */
  private final Executor decode;

  /** The connector's activations when this lookup began. */
  private final long activationsAtStart;

  /**
   * @param group the group's candidates, in request order, with their keys
   * @param hybrid a hybrid model's other groups, read beside the full-attention group's head read
   *     and combined with its answer; null for a model of one group
   */
  GroupLookup(
      RedisLookups ctx, CandidateGroup group, Prompt prompt, Executor decode, HybridPlan hybrid) {
    this.ctx = ctx;
    this.state = ctx.state(group.g);
    this.group = group;
    this.decode = decode;
    this.activationsAtStart = ctx.activations();
    this.planner = new LookupPlanner(state, group, prompt, hybrid, ctx.weights, ctx.counters);
  }

  /** The group's candidates' matches in their order, or null when Redis stayed unavailable. */
  CompletableFuture<PodMatch[]> run() {
    return turn();
  }

  private CompletableFuture<PodMatch[]> turn() {
    CompletableFuture<Step> step =
        switch (planner.next(state.mustVerify(ctx.activations()))) {
          case VERIFY -> verify();
          case SCRIPT ->
              ctx.scriptLookup(group, planner.scriptFields(), planner.speculative(), decode)
                  .thenApply(planner::scriptReply);
          case CHUNK -> readChunk();
          case HEAD -> readHead();
        };
    return step.thenCompose(
        s -> {
          if (!s.done()) {
            return turn();
          }
          if (s.matches() != null) {
            state.answered(activationsAtStart);
          } else {
            state.unanswered();
          }
          return CompletableFuture.completedFuture(s.matches());
        });
  }

  /**
   * A pause in this group's reads, which every failover makes: is the node serving it the one its
   * data was written on? Until a writer has reset it, nothing it holds is credited.
   */
  private CompletableFuture<Step> verify() {
    return ctx.verifyNode(group.g)
        .thenApply(
            same ->
                planner.verified(same)
                    ? Step.again(LookupPlanner.Again.VERIFIED)
                    : Step.answer(null));
  }

  private CompletableFuture<Step> readHead() {
    CompletableFuture<Long> now = ctx.clock.nowMillis(group.g);
    HeadRead read = planner.head(now.isDone() ? now.join() : Long.MAX_VALUE);
    return ctx.readWithRoutes(group.g, read.fields(), read.routeFields())
        .thenCombineAsync(
            now,
            (reply, ms) -> {
              if (!reply.isDone()) {
                return Step.answer(null);
              }
              HeadReply r = reply.orElseThrow();
              return planner.headReply(
                  values(r.blocks()), r.routes() == null ? null : values(r.routes()), ms);
            },
            decode);
  }

  private CompletableFuture<Step> readChunk() {
    return ctx.read(group.g, planner.chunk())
        .thenApplyAsync(
            outcome ->
                outcome.isDone()
                    ? planner.chunkReply(values(outcome.orElseThrow()))
                    : Step.answer(null),
            decode);
  }

  private static List<byte[]> values(List<KeyValue<byte[], byte[]>> reply) {
    List<byte[]> values = new ArrayList<>(reply.size());
    for (KeyValue<byte[], byte[]> kv : reply) {
      values.add(kv.hasValue() ? kv.getValue() : null);
    }
    return values;
  }
}
