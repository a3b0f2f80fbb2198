/**
 * vLLM's KV-cache events as values, whatever wire era they were decoded from: {@link
 * io.kvindex.event.BlockStored}, {@link io.kvindex.event.BlockRemoved}, {@link
 * io.kvindex.event.AllBlocksCleared}, in the {@link io.kvindex.event.KvEventBatch} of one engine
 * step.
 */
package io.kvindex.event;
