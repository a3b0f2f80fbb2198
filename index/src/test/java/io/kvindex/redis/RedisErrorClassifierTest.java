package io.kvindex.redis;

import static io.kvindex.redis.RedisErrorClass.REAL;
import static io.kvindex.redis.RedisErrorClass.RELOAD;
import static io.kvindex.redis.RedisErrorClass.TEMPORARY;
import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisBusyException;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisCommandInterruptedException;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisLoadingException;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.RedisReadOnlyException;
import io.lettuce.core.cluster.PartitionSelectorException;
import io.lettuce.core.cluster.UnknownPartitionException;
import io.lettuce.core.cluster.models.partitions.Partitions;
import io.lettuce.core.protocol.RedisProtocolException;
import java.io.IOException;
import java.net.ConnectException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class RedisErrorClassifierTest {

  private final RedisErrorClassifier classifier = RedisErrorClassifier.standard();

  private void assertClass(Throwable e, RedisErrorClass expected, String reason) {
    ClassifiedError classified = classifier.classify(e);
    assertThat(classified.errorClass()).as("class of %s", e).isEqualTo(expected);
    assertThat(classified.reason()).as("reason of %s", e).isEqualTo(reason);
  }

  /** Server replies, verbatim as Redis 7.0.15 sends them. */
  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "LOADING Redis is loading the dataset in memory|TEMPORARY|loading",
        "CLUSTERDOWN The cluster is down|TEMPORARY|clusterdown",
        "TRYAGAIN Multiple keys request during rehashing of slot|TEMPORARY|tryagain",
        "MOVED 3999 127.0.0.1:6381|TEMPORARY|moved",
        "ASK 3999 127.0.0.1:6381|TEMPORARY|ask",
        "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.|TEMPORARY|masterdown",
        "ERR user_script:1: attempt to index local 't' (a nil value) script: 5f2a, on @user_script:1.|REAL|lua",
        "ERR user_script:1: boom script: 5f2a, on @user_script:1.|REAL|lua",
        "ERR Error compiling script (new function): user_script:1: unexpected symbol|REAL|lua",
        "ERR Script killed by user with SCRIPT KILL... script: 5f2a, on @user_script:3.|REAL|script_killed",
        "ERR unknown command 'FOO'|REAL|err",
        "WRONGTYPE Operation against a key holding the wrong kind of value script: 5f2a, on @user_script:1.|REAL|wrongtype",
        "CROSSSLOT Keys in request don't hash to the same slot|REAL|crossslot",
        "NOPERM this user has no permissions to run the 'evalsha' command|REAL|noperm",
        "NOAUTH Authentication required.|REAL|noauth",
        "WRONGPASS invalid username-password pair or user is disabled.|REAL|wrongpass",
        "EXECABORT Transaction discarded because of previous errors.|REAL|execabort",
        "OOM command not allowed when used memory > 'maxmemory'. script: 5f2a, on @user_script:1.|REAL|oom",
        "OOM command not allowed when used memory > 'maxmemory'.|REAL|oom",
        "KVINDEX_FENCED lease token 4 is stale|REAL|KVINDEX_FENCED",
        "bad input|REAL|unknown",
        "UNKILLABLE Sorry the script already executed write commands|REAL|unknown",
      })
  void classify_serverReply(String message, RedisErrorClass expected, String reason) {
    assertClass(new RedisCommandExecutionException(message), expected, reason);
  }

  @Test
  void classify_busy() {
    assertClass(
        new RedisBusyException(
            "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."),
        TEMPORARY,
        "busy");
  }

  @Test
  void classify_busyKeyIsNotBusy() {
    // lettuce maps every reply starting with "BUSY" to RedisBusyException
    ClassifiedError classified =
        classifier.classify(new RedisBusyException("BUSYKEY Target key name already exists."));
    assertThat(classified.errorClass()).isEqualTo(REAL);
    assertThat(classified.code()).isEqualTo("BUSYKEY");
  }

  @Test
  void classify_busyGroupIsNotBusy() {
    ClassifiedError classified =
        classifier.classify(new RedisBusyException("BUSYGROUP Consumer Group name already exists"));
    assertThat(classified.errorClass()).isEqualTo(REAL);
    assertThat(classified.code()).isEqualTo("BUSYGROUP");
  }

  @Test
  void classify_noScript() {
    assertClass(
        new RedisNoScriptException("NOSCRIPT No matching script. Please use EVAL."),
        RELOAD,
        "noscript");
  }

  @Test
  void classify_loadingException() {
    assertClass(
        new RedisLoadingException("LOADING Redis is loading the dataset in memory"),
        TEMPORARY,
        "loading");
  }

  @Test
  void classify_readOnly() {
    assertClass(
        new RedisReadOnlyException("READONLY You can't write against a read only replica."),
        TEMPORARY,
        "readonly");
  }

  @Test
  void classify_commandTimeout() {
    assertClass(
        new RedisCommandTimeoutException("Command timed out after 500 millisecond(s)"),
        TEMPORARY,
        "timeout");
  }

  @Test
  void classify_connectionRefused() {
    assertClass(
        new RedisConnectionException(
            "Unable to connect to 127.0.0.1:1", new ConnectException("Connection refused")),
        TEMPORARY,
        "connection");
  }

  @Test
  void classify_notConnected() {
    assertClass(
        new RedisException("Currently not connected. Commands are rejected."),
        TEMPORARY,
        "not_connected");
  }

  @Test
  void classify_requestQueueFull() {
    assertClass(new RedisException("Request queue size exceeded: 10000"), TEMPORARY, "queue_full");
    assertClass(new RedisException("Command buffer size exceeded"), TEMPORARY, "queue_full");
    assertClass(new RedisException("Internal stack size exceeded: 10"), TEMPORARY, "queue_full");
  }

  @Test
  void classify_disconnectedInFlight() {
    assertClass(new RedisException("Connection disconnected"), TEMPORARY, "disconnected");
  }

  @Test
  void classify_socketError() {
    assertClass(new IOException("Connection reset by peer"), TEMPORARY, "connection");
    assertClass(
        new RedisException("java.io.IOException: Broken pipe", new IOException("Broken pipe")),
        TEMPORARY,
        "connection");
  }

  @Test
  void classify_connectionClosed() {
    assertClass(new RedisException("Connection closed"), REAL, "closed");
    assertClass(new RedisException("Connection is closed"), REAL, "closed");
  }

  @Test
  void classify_partitionExceptions() {
    assertClass(
        new PartitionSelectorException(
            "Cannot determine a partition for slot 12.", new Partitions()),
        TEMPORARY,
        "partition");
    assertClass(
        new UnknownPartitionException("Connection not allowed. This partition is not known"),
        TEMPORARY,
        "partition");
  }

  @Test
  void classify_interrupted() {
    assertClass(
        new RedisCommandInterruptedException(new InterruptedException()), REAL, "interrupted");
  }

  @Test
  void classify_protocol() {
    assertClass(new RedisProtocolException("Invalid first byte"), REAL, "protocol");
  }

  @Test
  void classify_unknownException() {
    assertClass(new IllegalStateException("boom"), REAL, "unknown");
    assertClass(new RedisException("something new"), REAL, "unknown");
  }

  @Test
  void classify_javaTimeout() {
    assertClass(new TimeoutException(), TEMPORARY, "timeout");
  }

  @Test
  void classify_nestedCompletionAndExecutionException() {
    RedisBusyException busy = new RedisBusyException("BUSY Redis is busy running a script.");
    Throwable nested =
        new CompletionException(new ExecutionException(new CompletionException(busy)));
    ClassifiedError classified = classifier.classify(nested);
    assertThat(classified.errorClass()).isEqualTo(TEMPORARY);
    assertThat(classified.error()).isSameAs(busy);
  }

  @Test
  void classify_oomTemporaryWhenConfigured() {
    RedisCommandExecutionException oom =
        new RedisCommandExecutionException(
            "OOM command not allowed when used memory > 'maxmemory'.");
    assertThat(RedisErrorClassifier.of(true).classify(oom).errorClass()).isEqualTo(TEMPORARY);
    assertThat(RedisErrorClassifier.of(false).classify(oom).errorClass()).isEqualTo(REAL);
  }

  @Test
  void classify_ownTypedExceptionsKeepTheirClass() {
    RedisRealException real =
        new RedisRealException(
            "apply",
            new ClassifiedError(
                REAL, "noscript", "NOSCRIPT", new RedisNoScriptException("NOSCRIPT x")));
    assertClass(real, REAL, "noscript");
  }

  @Test
  void classify_serverCodeIsFirstWord() {
    ClassifiedError classified =
        classifier.classify(new RedisCommandExecutionException("WRONGTYPE Operation against"));
    assertThat(classified.code()).isEqualTo("WRONGTYPE");
    assertThat(classifier.classify(new RedisConnectionException("x")).code()).isNull();
  }
}
