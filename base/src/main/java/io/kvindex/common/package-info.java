/**
 * What every kvindex module shares below the domain: the argument checks ({@link
 * io.kvindex.common.Check}), named and bounded executors ({@link io.kvindex.common.Threads}),
 * waiting on futures ({@link io.kvindex.common.Await}) and the root of the exception family ({@link
 * io.kvindex.common.KvIndexException}).
 */
package io.kvindex.common;
