package io.kvindex.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.kvindex.index.KeyCheckNote;
import io.kvindex.inspect.IndexReport;
import io.kvindex.inspect.IndexReport.Group;
import io.kvindex.inspect.IndexReport.ModelKeys;
import io.kvindex.inspect.IndexReport.Pod;
import io.kvindex.inspect.IndexReport.Rank;
import io.kvindex.inspect.IndexReport.Replica;
import io.kvindex.inspect.RedisInspector;
import io.kvindex.redis.RedisConnector;
import io.kvindex.router.KvRouterBuilder;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code kvindex inspect}: what an index in Redis records about itself (see {@link
 * RedisInspector}), for a person or, with {@code --json}, for a script. Read-only. Exit 0 when the
 * index exists and was read, 1 when it does not exist or Redis cannot be read. Not thread-safe (one
 * instance per command line).
 */
@Command(
    name = "inspect",
    mixinStandardHelpOptions = true,
    description = {
      "Show what an index in Redis records about itself: its groups, epoch and stored version; each"
          + " model's key modes as the ingesters and the routers noted them; per pod and rank the"
          + " liveness, holder slot, watermark, lease, blocks held per tier and last apply and"
          + " purge; per group the dead slots, GC pass, unlocated blocks, overflowed segments and"
          + " memory; the ingester replicas and their leases.",
      "Read-only, and bounded: it never scans the blocks hash. Times are Redis's clock."
    })
final class InspectCommand implements Callable<Integer> {
  private static final ObjectMapper JSON =
      new ObjectMapper()
          .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
          .enable(SerializationFeature.INDENT_OUTPUT);

  @Spec CommandSpec spec;

  @Option(
      names = "--redis-uri",
      paramLabel = "URI",
      defaultValue = KvRouterBuilder.DEFAULT_REDIS_URI,
      description =
          "The index's Redis: redis://[user:password@]host:port (rediss:// for TLS),"
              + " redis-cluster://host1:port1,host2:port2 or"
              + " redis-sentinel://[password@]s1:p1,s2:p2#master (default: ${DEFAULT-VALUE}).")
  String redisUri;

  @Option(
      names = "--redis-tls-ca-file",
      paramLabel = "FILE",
      description =
          "PEM file of the CA certificates a rediss:// server's certificate is checked against"
              + " (default: the JVM's trust store).")
  Path tlsCaFile;

  @Option(
      names = {"--index-name", "--index"},
      paramLabel = "NAME",
      defaultValue = KvRouterBuilder.DEFAULT_INDEX_NAME,
      description = "The index, as the ingesters name it (default: ${DEFAULT-VALUE}).")
  String indexName;

  @Option(
      names = "--model",
      paramLabel = "MODEL",
      description = "Only this model's pods and keys (default: every model).")
  String model;

  @Option(
      names = "--pod",
      paramLabel = "POD",
      description = "Only pods of this name (default: every pod).")
  String pod;

  @Option(names = "--json", description = "Print one JSON object instead of text.")
  boolean json;

  @Override
  public Integer call() {
    IndexReport report = read();
    PrintWriter out = spec.commandLine().getOut();
    if (json) {
      out.println(toJson(report));
    } else {
      new Text(out, report.nowMs()).print(report);
    }
    out.flush();
    if (!report.exists()) {
      PrintWriter err = spec.commandLine().getErr();
      err.println(
          spec.qualifiedName()
              + ": no index '"
              + indexName
              + "' in this Redis: check --index-name (as the ingesters' --index-name) and"
              + " --redis-uri");
      err.flush();
      return 1;
    }
    return 0;
  }

  private IndexReport read() {
    RedisConnector.Builder builder = RedisConnector.builder().uri(redisUri);
    if (tlsCaFile != null) {
      builder.tlsCaFile(tlsCaFile);
    }
    try (RedisConnector redis = builder.build()) {
      return RedisInspector.of(redis, indexName).read(model, pod);
    } catch (RuntimeException e) {
      throw new InputException(
          "cannot read index '"
              + indexName
              + "' at "
              + RedisConnector.masked(redisUri)
              + ": "
              + RedisConnector.masked(String.valueOf(e.getMessage()))
              + "; check --redis-uri, and that its Redis user may read the index's keys (the"
              + " router's ACL line in docs/operations.md)",
          e);
    }
  }

  static String toJson(IndexReport report) {
    try {
      return JSON.writeValueAsString(report);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The report as text for a person: one section per kind, times relative to Redis's clock. */
  private record Text(PrintWriter out, long now) {
    void print(IndexReport r) {
      out.printf(
          "index '%s' (Redis time %s): %s%n",
          r.index(),
          Instant.ofEpochMilli(r.nowMs()),
          r.exists() ? r.groups() + " group(s)" : "does not exist");
      if (!r.exists()) {
        return;
      }
      out.printf(
          "segment limit: %s%n",
          r.segmentSlots().isEmpty()
              ? "not noted (no writer applied yet)"
              : r.segmentSlots().stream().map(String::valueOf).collect(Collectors.joining(", "))
                  + (r.segmentSlots().size() > 1 ? "  ! writers disagree" : ""));
      out.println();
      out.println("models");
      if (r.models().isEmpty()) {
        out.println("  none noted");
      }
      r.models().forEach(this::model);
      out.println();
      out.println("pods");
      if (r.pods().isEmpty()) {
        out.println("  none");
      }
      r.pods().forEach(this::pod);
      if (r.truncated()) {
        out.printf(
            "  ... more streams than one call reads (%d): narrow with --model or --pod%n",
            RedisInspector.MAX_STREAMS);
      }
      out.println();
      out.println("groups");
      r.groupReports().forEach(this::group);
      out.println();
      out.println("ingester replicas");
      if (r.replicas().isEmpty()) {
        out.println("  none registered");
      }
      r.replicas().forEach(this::replica);
    }

    private void model(ModelKeys m) {
      out.printf(
          "  %s  writers: %s  routers: %s%n",
          m.model(),
          m.writerModes().isEmpty() ? "none noted" : String.join(", ", m.writerModes()),
          m.readerKeys().isEmpty() ? "none noted" : String.join(", ", m.readerKeys()));
      if (m.problem() != null) {
        out.printf("    ! %s%n", m.problem());
      }
      KeyCheckNote check = m.keyCheck();
      if (check != null) {
        out.printf(
            "    engines hash as: %s  (key check %s: %d of %d sampled stores matched the routers'"
                + " keys, noted %s ago)%n",
            check.engines() == null ? "no known form" : check.engines(),
            check.verdict().label(),
            check.matches(),
            check.matches() + check.mismatches(),
            ago(Math.max(0, now - check.atMillis())));
        if (check.verdict() != KeyCheckNote.Verdict.MATCH) {
          out.printf("    ! %s%n", check.detail());
        }
      }
    }

    private void pod(Pod p) {
      String liveness =
          p.livenessDeadlineMs() == null
              ? "no pod record (not live)"
              : p.live()
                  ? "live, deadline in " + ago(p.livenessDeadlineMs() - now)
                  : "NOT live, deadline passed " + ago(now - p.livenessDeadlineMs()) + " ago";
      out.printf(
          "  %s / %s  group %d  %s%s%n",
          p.model(),
          p.pod(),
          p.group(),
          liveness,
          p.inferredCapacityBlocks() == null
              ? ""
              : "  evictions inferred (a model of " + p.inferredCapacityBlocks() + " blocks)");
      p.ranks().forEach(this::rank);
    }

    private void rank(Rank k) {
      StringBuilder line = new StringBuilder();
      line.append("    rank ").append(k.rank());
      line.append("  slot ").append(k.slot() == 0 ? "none" : k.slot());
      if (k.staged()) {
        line.append(" (staged: a rebuild routers do not see yet)");
      }
      line.append("  watermark ").append(k.watermark() == null ? "none" : k.watermark());
      if (k.batchInProgress() != null) {
        String[] batch = k.batchInProgress().split(":", 2);
        line.append(" (batch ").append(batch[0]).append(" in progress");
        if (batch.length > 1) {
          line.append(", ").append(batch[1]).append(" blocks done");
        }
        line.append(')');
      }
      line.append("  lease ")
          .append(
              k.leaseOwner() == null
                  ? "none"
                  : k.leaseOwner() + " (ttl " + ago(k.leaseTtlMs() == null ? 0 : k.leaseTtlMs()))
          .append(k.leaseOwner() == null ? "" : ")");
      line.append(
          String.format(
              Locale.ROOT,
              "  blocks %d (gpu %d, cpu %d, storage %d, other %d)",
              k.blocks().all(),
              k.blocks().gpu(),
              k.blocks().cpu(),
              k.blocks().storage(),
              k.blocks().other()));
      line.append("  last apply ")
          .append(k.lastApplyMs() == null ? "never" : ago(now - k.lastApplyMs()) + " ago");
      if (k.lastPurge() != null) {
        line.append("  last purge ")
            .append(ago(now - k.lastPurge().atMs()))
            .append(" ago")
            .append(
                k.lastPurge().cleanupPending()
                    ? " (slot " + k.lastPurge().slotRetired() + " awaits GC)"
                    : " (cleaned up)");
      }
      out.println(line);
    }

    private void group(Group g) {
      out.printf(
          "  group %d  epoch %s  stored version %s%n",
          g.group(),
          g.epoch() == null ? "none" : g.epoch(),
          g.version() == null ? "none (an earlier version: block counts not exact)" : g.version());
      out.printf(
          "    slots %d handed out, %d free, %d dead%s%n",
          g.slotsHandedOut(),
          g.freeSlots(),
          g.deadSlots().size(),
          g.deadSlots().isEmpty()
              ? ""
              : " ("
                  + g.deadSlots().stream()
                      .limit(16)
                      .map(d -> d.slot() + " in pass " + d.diedInPass())
                      .collect(Collectors.joining(", "))
                  + (g.deadSlots().size() > 16 ? ", ..." : "")
                  + ")");
      out.printf(
          "    gc pass %d%s  unlocated blocks %d  overflowed segments %d  speculative route fields"
              + " %d%n",
          g.gcPass(),
          g.gcPassInProgress() ? " in progress" : " done",
          g.unlocatedBlocks(),
          g.overflowedSegments(),
          g.speculativeFields());
      long total = g.memoryBytes().values().stream().mapToLong(Long::longValue).sum();
      out.printf(
          "    memory %s (sampled: %s)%n",
          bytes(total),
          g.memoryBytes().entrySet().stream()
              .map(e -> e.getKey() + " " + bytes(e.getValue()))
              .collect(Collectors.joining(", ")));
    }

    private void replica(Replica r) {
      out.printf(
          "  %s  %s  leases %d%n",
          r.replica(),
          r.live()
              ? "live, expires in " + ago(r.expiresAtMs() - now)
              : "lapsed " + ago(now - r.expiresAtMs()) + " ago",
          r.leases());
    }

    private static String ago(long ms) {
      if (ms < 1000) {
        return ms + "ms";
      }
      if (ms < 120_000) {
        return String.format(Locale.ROOT, "%.1fs", ms / 1000.0);
      }
      if (ms < 7_200_000) {
        return (ms / 60_000) + "m";
      }
      return (ms / 3_600_000) + "h";
    }

    private static String bytes(long n) {
      if (n < 1024) {
        return n + " B";
      }
      if (n < 1024 * 1024) {
        return String.format(Locale.ROOT, "%.1f KiB", n / 1024.0);
      }
      return String.format(Locale.ROOT, "%.1f MiB", n / (1024.0 * 1024));
    }
  }
}
