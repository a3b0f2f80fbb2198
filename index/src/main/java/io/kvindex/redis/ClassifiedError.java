package io.kvindex.redis;

import java.util.Objects;

/**
 * A failure of a Redis call with its class and a short reason.
 *
 * <p>{@code reason} is a small, fixed vocabulary used as a metric tag: {@code connection}, {@code
 * not_connected}, {@code queue_full}, {@code disconnected}, {@code timeout}, {@code deadline},
 * {@code busy}, {@code loading}, {@code clusterdown}, {@code tryagain}, {@code moved}, {@code ask},
 * {@code masterdown}, {@code readonly}, {@code partition}, {@code noscript}, {@code lua}, {@code
 * script_killed}, {@code err}, {@code wrongtype}, {@code crossslot}, {@code noperm}, {@code
 * noauth}, {@code wrongpass}, {@code execabort}, {@code oom}, {@code interrupted}, {@code
 * protocol}, {@code closed}, {@code unknown}, or one of our own script codes ({@code KVINDEX_...},
 * kept as sent).
 *
 * <p>Immutable, thread-safe.
 *
 * @param errorClass what the caller should do
 * @param reason the metric tag described above
 * @param code the first word of the server's error reply ({@code WRONGTYPE}), or null for a
 *     client-side failure
 * @param error the failure itself, with {@link java.util.concurrent.CompletionException} and {@link
 *     java.util.concurrent.ExecutionException} wrappers removed
 */
public record ClassifiedError(
    RedisErrorClass errorClass, String reason, String code, Throwable error) {

  public ClassifiedError {
    Objects.requireNonNull(errorClass, "errorClass");
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(error, "error");
  }

  /** True if the class is {@link RedisErrorClass#TEMPORARY}. */
  public boolean isTemporary() {
    return errorClass == RedisErrorClass.TEMPORARY;
  }
}
