/**
 * The gateway side of kvindex: {@link io.kvindex.router.KvRouter} scores candidate pods by the
 * prompt prefix they already hold in the shared Redis index and picks one, with a load guard.
 */
package io.kvindex.router;
