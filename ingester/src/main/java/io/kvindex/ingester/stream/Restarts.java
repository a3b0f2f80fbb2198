package io.kvindex.ingester.stream;

import io.kvindex.ingester.Shared;
import io.kvindex.ingester.stream.Timers.Due;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What makes a stream purge and start again from its engine's replay: an engine restart (its
 * process start time changed, a live sequence below the watermark, another payload in the ring), an
 * index that lost the stream, a router's resync, an engine that sleeps, and the purges other
 * threads (the coordinator, the reconciler) ask for. Each is told to the sequencer, logged and
 * counted; the purge is tried at once, and the ring asked at the next step. Not thread-safe: the
 * stream's worker thread uses it; other threads' requests reach it through {@link StreamStatus}.
 */
final class Restarts {
  private static final Logger log = LoggerFactory.getLogger(StreamWorker.class);

  private final Shared shared;
  private final Sequencer sequencer;
  private final StreamStatus status;
  private final Timers timers;
  private final CatchUp catchUp;
  private final Inference inference;
  private final String label;
  private boolean lastReportedAsleep;

  Restarts(
      Shared shared,
      Sequencer sequencer,
      StreamStatus status,
      Timers timers,
      CatchUp catchUp,
      Inference inference,
      String label) {
    this.shared = shared;
    this.sequencer = sequencer;
    this.status = status;
    this.timers = timers;
    this.catchUp = catchUp;
    this.inference = inference;
    this.label = label;
  }

  /** Takes what other threads asked of the stream since the last step. */
  void takeRequests() {
    if (status.takeRestartRequest()) {
      engineRestarted("its process start time changed");
    }
    if (status.takeIndexResetRequest()) {
      indexLost();
    }
    String resync = status.takeResyncRequest();
    if (resync != null) {
      resync(resync);
    }
    boolean reportedAsleep = status.engineAsleep();
    if (reportedAsleep != lastReportedAsleep) {
      // Edges of what the scrapes say: a live batch may show the engine awake before a scrape does.
      lastReportedAsleep = reportedAsleep;
      sequencer.asleep(reportedAsleep);
      if (reportedAsleep) {
        log.info(
            "{}: the engine sleeps; purging, and nothing from before the sleep applies", label);
        timers.now(Due.RETRY);
      }
    }
    String reason;
    while ((reason = status.nextPurgeRequest()) != null) {
      sequencer.requestPurge(reason);
      // The purge shows as pending before its request leaves the queue: the coordinator releases
      // a departed pod's lease only once neither holds it.
      status.progress(sequencer);
      status.dropPurgeRequest();
      timers.now(Due.RETRY);
    }
    status.progress(sequencer);
  }

  /** The ring holds another payload under a sequence this stream applied: a new process. */
  void anotherEngine(List<Batch> replayed) {
    engineRestarted(
        "its replay ring's batch "
            + replayed.get(0).seq()
            + " is not the one applied, so a new process published it");
  }

  private void engineRestarted(String evidence) {
    sequencer.restart();
    restarted(evidence);
  }

  /** The sequencer found the engine restarted ({@code evidence}) and purges. */
  void restarted(String evidence) {
    log.warn("{}: engine restarted ({}); purging", label, evidence);
    status.progress(sequencer);
    shared.metrics().restart();
    timers.now(Due.RETRY);
    catchUp.soon();
  }

  /** The index lost what it held of the stream. */
  void indexLost() {
    log.warn(
        "{}: the index lost what it held of this stream; starting again from the replay", label);
    sequencer.indexLost();
    status.progress(sequencer);
    timers.now(Due.RETRY);
    catchUp.soon();
  }

  private void resync(String note) {
    if (inference.resync(note)) {
      return;
    }
    log.warn(
        "{}: resyncing on a router's request ({}): purging, then replaying what the ring covers;"
            + " evictions are not inferred: {}",
        label,
        note,
        inference.whyNot());
    sequencer.resync();
    status.progress(sequencer);
    timers.now(Due.RETRY);
    catchUp.soon();
  }
}
