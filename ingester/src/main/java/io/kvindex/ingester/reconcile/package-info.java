/**
 * The level-triggered backstop for lossy events: the {@link
 * io.kvindex.ingester.reconcile.Reconciler} scrapes each owned pod's {@code /metrics} for its sleep
 * state, its reachability and its engine incarnation, and asks the streams to purge or restart when
 * they say so.
 */
package io.kvindex.ingester.reconcile;
