package io.kvindex.ingester.keycheck;

import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.KeyCheckNote;
import io.kvindex.index.KeyCheckNote.Verdict;
import io.kvindex.index.KeyMode;
import io.kvindex.index.KeySpec;
import io.kvindex.index.ModelNotes;
import io.kvindex.ingester.IngesterMetrics;
import io.kvindex.ingester.keycheck.StoreCheck.Finding;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ingester's key check: every model's sampled stores recomputed with the keys routers noted for
 * the model, counted, logged, shown on {@code /readyz} and kept in the index for {@code inspect}
 * and for routers that adopt the engines' keys. Thread-safe: stream workers sample, the ingester's
 * loop refreshes.
 */
public final class KeyChecks {
  private static final Logger log = LoggerFactory.getLogger(KeyChecks.class);

  /** The latest findings of a model that its verdict weighs: a mismatch needs most of them. */
  static final int WINDOW = 8;

  /** A mismatch that lasts is logged again at most this often per model. */
  static final Duration LOG_EVERY = Duration.ofMinutes(10);

  /** A model's note is written again this often (its counts move), besides on every change. */
  static final Duration NOTE_EVERY = Duration.ofSeconds(30);

  /** The longest a refresh waits for the routers' notes; they are read again next time. */
  static final Duration READ_TIMEOUT = Duration.ofSeconds(2);

  /** Models checked at most; past it new models are not checked (discovery bounds them anyway). */
  static final int MAX_MODELS = 4096;

  private final long intervalNanos;
  private final ModelNotes index;
  private final IngesterMetrics metrics;
  private final LongSupplier ticker;
  private final InstantSource clock;
  private final Map<String, ModelCheck> models = new ConcurrentHashMap<>();
  private volatile Map<String, KeySpec> configured = Map.of();

  /**
   * @param interval at most one store per model is checked per interval; zero turns the check off
   */
  public KeyChecks(
      Duration interval,
      ModelNotes index,
      IngesterMetrics metrics,
      LongSupplier ticker,
      InstantSource clock) {
    this.intervalNanos = interval.toNanos();
    this.index = index;
    this.metrics = metrics;
    this.ticker = ticker;
    this.clock = clock;
  }

  /** Whether the check runs at all ({@code --key-check-interval} above 0). */
  public boolean enabled() {
    return intervalNanos > 0;
  }

  /**
   * Whether {@link #sample} would look at a batch of {@code model} now: the check is on, and the
   * model is new to it or due (one map read and a clock read).
   */
  public boolean due(String model) {
    if (!enabled()) {
      return false;
    }
    ModelCheck check = models.get(model);
    return check == null ? models.size() < MAX_MODELS : ticker.getAsLong() - check.dueNanos >= 0;
  }

  /**
   * Checks the first store of {@code batch} that can be checked, if {@code model} is due: cheap
   * when it is not (one map read and a clock read).
   */
  public void sample(String model, KeyMode mode, KvEventBatch batch) {
    if (!enabled()) {
      return;
    }
    ModelCheck check = models.get(model);
    if (check == null) {
      if (models.size() >= MAX_MODELS) {
        return;
      }
      check = models.computeIfAbsent(model, ModelCheck::new);
    }
    long now = ticker.getAsLong();
    if (now - check.dueNanos < 0) {
      return;
    }
    KeySpec keys = keysOf(model);
    for (KvEvent event : batch.events()) {
      if (event instanceof BlockStored store) {
        Optional<Finding> finding = StoreCheck.check(store, keys, mode);
        if (finding.isPresent()) {
          check.dueNanos = now + intervalNanos;
          record(check, finding.get());
          return;
        }
      }
    }
  }

  /** The keys routers noted for {@code model}, else their default keys, else null. */
  private KeySpec keysOf(String model) {
    Map<String, KeySpec> keys = configured;
    KeySpec own = keys.get(model);
    return own != null ? own : keys.get("");
  }

  private void record(ModelCheck check, Finding finding) {
    if (finding.configured() != null) {
      metrics.keyCheck(check.model, finding.matches());
    }
    KeyCheckNote note;
    boolean changed;
    synchronized (check) {
      check.add(finding);
      note = check.note(clock.millis());
      changed = check.changed(note);
    }
    if (changed) {
      logChange(check, note);
      write(check, note);
    }
  }

  private void logChange(ModelCheck check, KeyCheckNote note) {
    long now = ticker.getAsLong();
    if (note.verdict() == Verdict.MISMATCH) {
      log.warn(
          "model '{}': its engines' block hashes differ from the routers' keys: {}",
          check.model,
          note.detail());
      check.loggedAtNanos = now;
    } else if (note.verdict() == Verdict.MATCH && check.loggedMismatch) {
      log.info(
          "model '{}': the routers' keys {} reproduce its engines' hashes again",
          check.model,
          note.configured());
    }
    check.loggedMismatch = note.verdict() == Verdict.MISMATCH;
  }

  /**
   * Reads the keys routers noted, writes each model's note that is due, and logs a mismatch that
   * lasts again once {@link #LOG_EVERY} has passed. For the ingester's loop (every few seconds).
   */
  public void refresh() {
    if (!enabled()) {
      return;
    }
    index
        .readerKeysAsync()
        .completeOnTimeout(Optional.empty(), READ_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
        .join()
        .ifPresent(notes -> configured = parsed(notes));
    long now = ticker.getAsLong();
    for (ModelCheck check : models.values()) {
      KeyCheckNote note;
      synchronized (check) {
        note = check.last;
      }
      if (note == null) {
        continue;
      }
      if (note.verdict() == Verdict.MISMATCH && now - check.loggedAtNanos >= LOG_EVERY.toNanos()) {
        logChange(check, note);
      }
      if (now - check.writtenAtNanos >= NOTE_EVERY.toNanos()) {
        synchronized (check) {
          note = check.note(clock.millis());
        }
        write(check, note);
      }
    }
  }

  private static Map<String, KeySpec> parsed(Map<String, String> notes) {
    Map<String, KeySpec> out = new HashMap<>();
    notes.forEach(
        (model, spec) -> {
          try {
            out.put(model, KeySpec.parse(spec));
          } catch (IllegalArgumentException e) {
            log.debug("a router noted keys '{}' for model '{}' that do not parse", spec, model);
          }
        });
    return Map.copyOf(out);
  }

  private void write(ModelCheck check, KeyCheckNote note) {
    check.writtenAtNanos = ticker.getAsLong();
    index
        .noteKeyCheckAsync(check.model, note)
        .whenComplete(
            (done, failure) -> {
              if (failure != null || !Boolean.TRUE.equals(done)) {
                check.writtenAtNanos -= NOTE_EVERY.toNanos(); // written again on the next refresh
              }
            });
  }

  /**
   * What {@code /readyz} adds: one line per model whose keys differ from its engines', naming what
   * the engines use.
   */
  public List<String> mismatches() {
    List<String> out = new ArrayList<>();
    for (ModelCheck check : models.values()) {
      KeyCheckNote note;
      synchronized (check) {
        note = check.last;
      }
      if (note != null && note.verdict() == Verdict.MISMATCH) {
        out.add("model '" + check.model + "': " + note.detail());
      }
    }
    out.sort(null);
    return out;
  }

  /** One model's findings. Guarded by itself, but for the volatile times. */
  private static final class ModelCheck {
    final String model;
    final Finding[] window = new Finding[WINDOW];
    int count;
    int next;
    long matches;
    long mismatches;
    Finding lastMismatch;
    Finding latest;
    KeyCheckNote last;
    volatile long dueNanos = Long.MIN_VALUE / 2;
    volatile long writtenAtNanos = Long.MIN_VALUE / 2;
    volatile long loggedAtNanos = Long.MIN_VALUE / 2;
    volatile boolean loggedMismatch;

    ModelCheck(String model) {
      this.model = model;
    }

    void add(Finding finding) {
      latest = finding;
      if (finding.configured() == null) {
        return;
      }
      if (finding.matches()) {
        matches++;
      } else {
        mismatches++;
        lastMismatch = finding;
      }
      window[next] = finding;
      next = (next + 1) % WINDOW;
      count = Math.min(count + 1, WINDOW);
    }

    /** The note of the findings so far. */
    KeyCheckNote note(long atMillis) {
      Finding shown = latest;
      Verdict verdict;
      if (shown.configured() == null) {
        verdict = Verdict.UNCONFIGURED;
      } else if (mismatchedMost()) {
        verdict = Verdict.MISMATCH;
        shown = lastMismatch;
      } else {
        verdict = Verdict.MATCH;
      }
      return new KeyCheckNote(
          verdict,
          shown.engines() == null ? null : shown.engines().spec(),
          shown.configured() == null ? null : shown.configured().spec(),
          matches,
          mismatches,
          detail(model, verdict, shown),
          atMillis);
    }

    private boolean mismatchedMost() {
      int wrong = 0;
      for (int i = 0; i < count; i++) {
        if (!window[i].matches()) {
          wrong++;
        }
      }
      return wrong * 2 > count;
    }

    /** Whether {@code note} says something else than the last one; keeps it. */
    boolean changed(KeyCheckNote note) {
      KeyCheckNote before = last;
      last = note;
      return before == null
          || before.verdict() != note.verdict()
          || !java.util.Objects.equals(before.engines(), note.engines())
          || !java.util.Objects.equals(before.configured(), note.configured());
    }
  }

  /** One sentence for users: what differs and what to do. */
  static String detail(String model, Verdict verdict, Finding f) {
    if (verdict == Verdict.MATCH) {
      return "";
    }
    String prefix =
        verdict == Verdict.UNCONFIGURED
            ? "no router noted keys for this model; "
            : "routers are told " + f.configured().spec() + ", but ";
    if (f.engines() == null) {
      return prefix
          + "no known form reproduces the engines' hashes ("
          + tried(f)
          + "): the engines may run with a PYTHONHASHSEED the routers are not told, or hash with"
          + " xxhash or xxhash_cbor without one, which no other process can reproduce; set"
          + " PYTHONHASHSEED on the engines and give the routers the same seed, or use token keys"
          + " (--model "
          + model
          + "=token:"
          + f.eventBlockSize()
          + ", key-mode=token for the pods' ingesters)";
    }
    if (f.engines().mode() == KeyMode.TOKEN) {
      return prefix
          + "the engines publish blocks of "
          + f.eventBlockSize()
          + " tokens: give the routers --model "
          + model
          + "="
          + f.engines().spec();
    }
    return prefix
        + "the engines hash as "
        + f.engines().spec()
        + ": give the routers --model "
        + model
        + "="
        + f.engines().spec()
        + (verdict == Verdict.MISMATCH ? " (or start them with --adopt-engine-keys)" : "");
  }

  /** The forms tried, in a few words. */
  private static String tried(Finding f) {
    KeySpec c = f.configured();
    String seeds =
        c == null || c.seed() == null
            ? "vLLM's default seed"
            : "vLLM's default seed or seed '" + c.seed() + "'";
    String sizes =
        c == null || c.blockSize() == f.eventBlockSize()
            ? "block size " + f.eventBlockSize()
            : "block size " + c.blockSize() + " or " + f.eventBlockSize();
    return "sha256, sha256_cbor, sha256_cbor_64bit, xxhash and xxhash_cbor with "
        + seeds
        + ", at "
        + sizes;
  }
}
