package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.resource.ClientResources;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.IntConsumer;

/**
 * The reads a router sends for each prompt, captured from Redis itself ({@code MONITOR} on every
 * node while the router scores each prompt once, an {@code ECHO} marker on every node after each),
 * and replayed as they were: the same HMGETs and GETs, the same keys and fields, to the same nodes,
 * all of one prompt in flight at once, through lettuce with no hashing, no retry wrapper and no
 * decoding. The replay is the ceiling a router's lookups are measured against. Thread-safe once
 * built: {@link #replay} may be called from any number of threads.
 */
final class CapturedReads implements AutoCloseable {
  private static final String MARK = "kvindex-bench-mark-";
  private static final Duration CAUGHT_UP = Duration.ofSeconds(30);

  /** One captured read: an HMGET of {@code fields}, or a GET when {@code fields} is null. */
  record Read(byte[] key, byte[][] fields) {}

  private final List<List<Read>> prompts;
  private final ClientResources resources;
  private final AutoCloseable client;
  private final AutoCloseable connection;
  private final RedisClusterAsyncCommands<byte[], byte[]> commands;

  private CapturedReads(List<List<Read>> prompts, List<URI> nodes) {
    this.prompts = List.copyOf(prompts);
    this.resources = ClientResources.create();
    if (nodes.size() == 1) {
      RedisClient standalone = RedisClient.create(resources, nodes.get(0).toString());
      var connected = standalone.connect(ByteArrayCodec.INSTANCE);
      this.client = standalone::shutdown;
      this.connection = connected;
      this.commands = connected.async();
    } else {
      RedisClusterClient cluster =
          RedisClusterClient.create(resources, nodes.stream().map(RedisURI::create).toList());
      var connected = cluster.connect(ByteArrayCodec.INSTANCE);
      this.client = cluster::shutdown;
      this.connection = connected;
      this.commands = connected.async();
    }
  }

  /**
   * Captures the reads {@code score} sends for prompts {@code 0 .. prompts - 1} on {@code nodes}
   * (every node of the topology), and connects a replayer to them.
   */
  static CapturedReads capture(List<URI> nodes, int prompts, IntConsumer score) {
    List<Monitor> monitors = new ArrayList<>();
    try {
      for (URI node : nodes) {
        monitors.add(new Monitor(node));
      }
      for (int i = 0; i < prompts; i++) {
        score.accept(i);
        for (Monitor monitor : monitors) {
          monitor.mark(i);
        }
      }
      List<List<Read>> reads = new ArrayList<>();
      for (int i = 0; i < prompts; i++) {
        reads.add(new ArrayList<>());
      }
      for (Monitor monitor : monitors) {
        monitor.collect(prompts, reads);
      }
      return new CapturedReads(reads, nodes);
    } finally {
      monitors.forEach(Monitor::close);
    }
  }

  int prompts() {
    return prompts.size();
  }

  /** The reads of every prompt, in capture order. */
  List<List<Read>> reads() {
    return prompts;
  }

  /**
   * Describes what the router sent per prompt, as captured: the replay sends exactly this. The
   * fields per HMGET are given over all HMGETs and per key: the blocks hash's and the speculative
   * routes'.
   */
  void describe(ObjectNode json) {
    long hmgets = 0;
    long gets = 0;
    long fields = 0;
    long[] byKey = new long[4]; // blocks HMGETs, their fields, routes HMGETs, their fields
    for (List<Read> reads : prompts) {
      for (Read read : reads) {
        if (read.fields() == null) {
          gets++;
        } else {
          hmgets++;
          fields += read.fields().length;
          int k = new String(read.key(), StandardCharsets.UTF_8).endsWith(":spec:routes") ? 2 : 0;
          byKey[k]++;
          byKey[k + 1] += read.fields().length;
        }
      }
    }
    json.put("blocks_hmgets_per_prompt", (double) byKey[0] / prompts.size());
    json.put("blocks_fields_per_hmget", byKey[0] == 0 ? 0 : round1((double) byKey[1] / byKey[0]));
    json.put("routes_hmgets_per_prompt", (double) byKey[2] / prompts.size());
    json.put("routes_fields_per_hmget", byKey[2] == 0 ? 0 : round1((double) byKey[3] / byKey[2]));
    json.put(
        "how", "MONITOR on every node while the router scored each prompt once, after a warm pass");
    json.put("prompts", prompts.size());
    json.put("hmgets_per_prompt", (double) hmgets / prompts.size());
    json.put("gets_per_prompt", (double) gets / prompts.size());
    json.put("fields_per_hmget", hmgets == 0 ? 0 : Math.round(10.0 * fields / hmgets) / 10.0);
  }

  private static double round1(double value) {
    return Math.round(10 * value) / 10.0;
  }

  /** Sends prompt {@code i}'s reads (modulo the count) at once and waits for every reply. */
  boolean replay(int i) {
    List<Read> reads = prompts.get(i % prompts.size());
    List<RedisFuture<?>> replies = new ArrayList<>(reads.size());
    for (Read read : reads) {
      replies.add(
          read.fields() == null
              ? commands.get(read.key())
              : commands.hmget(read.key(), read.fields()));
    }
    for (RedisFuture<?> reply : replies) {
      await(reply);
    }
    return true;
  }

  private static void await(RedisFuture<?> reply) {
    try {
      reply.get(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while replaying a read", e);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("a replayed read failed: " + e, e);
    }
  }

  @Override
  public void close() {
    try {
      connection.close();
      client.close();
    } catch (Exception e) {
      throw new IllegalStateException("closing the replayer failed", e);
    } finally {
      resources.shutdown(0, 2, TimeUnit.SECONDS);
    }
  }

  /**
   * A MONITOR connection to one node, read by its own thread, with a second connection that sends
   * the markers.
   */
  private static final class Monitor implements AutoCloseable {
    private final Socket feed;
    private final Socket marks;
    private final BufferedReader markReplies;
    private final List<String> lines = new ArrayList<>();
    private final Thread reader;

    Monitor(URI node) {
      try {
        feed = new Socket(node.getHost(), node.getPort());
        marks = new Socket(node.getHost(), node.getPort());
        markReplies =
            new BufferedReader(
                new InputStreamReader(marks.getInputStream(), StandardCharsets.US_ASCII));
        BufferedReader in =
            new BufferedReader(
                new InputStreamReader(feed.getInputStream(), StandardCharsets.US_ASCII));
        send(feed.getOutputStream(), "MONITOR");
        String ok = in.readLine();
        if (!"+OK".equals(ok)) {
          throw new IllegalStateException("MONITOR on " + node + " answered " + ok);
        }
        reader = new Thread(() -> read(in), "kvindex-bench-monitor-" + node.getPort());
        reader.setDaemon(true);
        reader.start();
      } catch (IOException e) {
        throw new UncheckedIOException("MONITOR on " + node, e);
      }
    }

    private void read(BufferedReader in) {
      try {
        for (String line = in.readLine(); line != null; line = in.readLine()) {
          synchronized (lines) {
            lines.add(line);
            lines.notifyAll();
          }
        }
      } catch (IOException e) {
        // the socket closed: the capture is over
      }
    }

    /** Sends the marker that ends prompt {@code i}'s reads on this node, and waits for its echo. */
    void mark(int i) {
      try {
        send(marks.getOutputStream(), "ECHO " + MARK + i);
        markReplies.readLine(); // $<length>
        markReplies.readLine(); // the marker
      } catch (IOException e) {
        throw new UncheckedIOException("a marker", e);
      }
    }

    /** Waits for the last marker, then adds this node's HMGETs and GETs to their prompts. */
    void collect(int prompts, List<List<Read>> reads) {
      String last = "\"" + MARK + (prompts - 1) + "\"";
      List<String> seen = awaitLine(last);
      int prompt = 0;
      for (String line : seen) {
        MonitorLine parsed = MonitorLine.parse(line.substring(1)).orElse(null);
        if (parsed == null || parsed.client().equals("lua")) {
          continue;
        }
        List<byte[]> args = parsed.args();
        String command = parsed.command();
        String first = args.size() > 1 ? new String(args.get(1), StandardCharsets.ISO_8859_1) : "";
        if (command.equals("ECHO") && first.startsWith(MARK)) {
          prompt = Integer.parseInt(first.substring(MARK.length())) + 1;
        } else if (prompt < prompts && command.equals("HMGET")) {
          byte[][] fields = args.subList(2, args.size()).toArray(byte[][]::new);
          reads.get(prompt).add(new Read(args.get(1), fields));
        } else if (prompt < prompts && command.equals("GET")) {
          reads.get(prompt).add(new Read(args.get(1), null));
        }
      }
    }

    private List<String> awaitLine(String ending) {
      long deadline = System.nanoTime() + CAUGHT_UP.toNanos();
      int checked = 0;
      synchronized (lines) {
        while (true) {
          for (; checked < lines.size(); checked++) {
            if (lines.get(checked).endsWith(ending)) {
              return new ArrayList<>(lines.subList(0, checked + 1));
            }
          }
          long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
          if (left <= 0) {
            throw new IllegalStateException("MONITOR did not show the last marker in " + CAUGHT_UP);
          }
          try {
            lines.wait(left);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while reading MONITOR", e);
          }
        }
      }
    }

    private static void send(OutputStream out, String inline) throws IOException {
      out.write((inline + "\r\n").getBytes(StandardCharsets.US_ASCII));
      out.flush();
    }

    @Override
    public void close() {
      try {
        feed.close();
        marks.close();
      } catch (IOException e) {
        // closing sockets of a finished capture
      }
    }
  }
}
