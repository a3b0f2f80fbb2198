package io.kvindex.testing;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.core.AppenderBase;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.LoggerFactory;

/**
 * Records every log event (DEBUG and up, of every logger) while open, with the messages and stack
 * traces of its throwables, so a test can search what a run logged. Needs logback-classic on the
 * test classpath. Thread-safe; close it in a {@code finally} or try-with-resources.
 */
public final class LogCapture implements AutoCloseable {
  private final Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
  private final Level rootLevel = root.getLevel();
  private final List<String> lines = new ArrayList<>();
  private final AppenderBase<ILoggingEvent> appender =
      new AppenderBase<>() {
        @Override
        protected void append(ILoggingEvent event) {
          StringBuilder line = new StringBuilder();
          line.append(event.getLevel()).append(' ').append(event.getLoggerName()).append(' ');
          line.append(event.getFormattedMessage());
          for (IThrowableProxy t = event.getThrowableProxy(); t != null; t = t.getCause()) {
            line.append(" | ").append(t.getClassName()).append(": ").append(t.getMessage());
          }
          synchronized (lines) {
            lines.add(line.toString());
          }
        }
      };

  private LogCapture() {}

  /** Starts recording, with the root logger at DEBUG until {@link #close()}. */
  public static LogCapture start() {
    LogCapture capture = new LogCapture();
    capture.appender.setContext(capture.root.getLoggerContext());
    capture.appender.start();
    capture.root.addAppender(capture.appender);
    capture.root.setLevel(Level.DEBUG);
    return capture;
  }

  /**
   * Every line recorded so far: level, logger, message, then each throwable's class and message.
   */
  public List<String> lines() {
    synchronized (lines) {
      return List.copyOf(lines);
    }
  }

  /** All lines as one text, for {@code doesNotContain} assertions. */
  public String text() {
    return String.join("\n", lines());
  }

  /** Stops recording and restores the root level. */
  @Override
  public void close() {
    root.detachAppender(appender);
    appender.stop();
    root.setLevel(rootLevel);
  }
}
