/**
 * Which replica owns which stream: the {@link io.kvindex.ingester.lease.Coordinator} registers the
 * replica, renews its leases, levels the load across live replicas by rendezvous hashing, starts a
 * worker per stream it holds and retires those of pods that left.
 */
package io.kvindex.ingester.lease;
