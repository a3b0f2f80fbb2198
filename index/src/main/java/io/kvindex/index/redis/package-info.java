/**
 * The Redis implementation of the prefix index: the key layout ({@link
 * io.kvindex.index.redis.KeySchema}, the only place key names are made), the Lua scripts and their
 * shared library, the write, lease and maintenance calls, and the read path that plans each
 * lookup's HMGETs. Reach it through {@link io.kvindex.index.PrefixIndex#builder()}; only the key
 * schema and its hash fields ({@link io.kvindex.index.redis.HashFields}), the stored values' types
 * ({@link io.kvindex.index.redis.PodRecord}, {@link io.kvindex.index.redis.StreamRecord}, {@link
 * io.kvindex.index.redis.BlockValue}, {@link io.kvindex.index.redis.SegmentValue}, {@link
 * io.kvindex.index.redis.SlotCounts}) and decoders ({@link io.kvindex.index.redis.StoredValues}),
 * for tools that read, measure or delete an index (the inspector), and the factory the builder
 * calls are public.
 */
/*
 * Implementation notes (RedisPrefixIndex and the scripts).
 *
 * Key layout and stored values: docs/key-layout.md, the one description, which KeyLayoutDocTest
 * holds to KeySchema. Each stored value has one Java type and one Lua library (BlockValue and
 * block_value.lua, SegmentValue and segment_value.lua, SlotCounts and slot_counts.lua, PodRecord and
 * pod_record.lua, StreamRecord and stream_record.lua; StoredValueFormatsTest), and each script call
 * one record that builds its KEYS and ARGV (ScriptCall; ScriptCallHeadersTest).
 *
 * Holders. Each stream that holds blocks owns a slot (1..4095) of its group; block entries name
 * slots, and the pod record maps the pod's live slots to ranks. A purge (or AllBlocksCleared)
 * removes the slot from the pod record and marks it dead: O(1), atomic, and no lookup can see the
 * old entries again because lookups only match slots listed in candidates' pod records. A slot is
 * reused only after a GC pass that started after its death has completed, so every old entry is
 * gone by then. GC is incremental: each call HSCANs about gcBudget fields and strips dead entries;
 * no script ever iterates a pod's whole content.
 *
 * Scripts. Every script is loaded with the libraries its LIBRARIES line names prepended (Scripts):
 * the stored values' (block_value.lua, segment_value.lua, slot_counts.lua, pod_record.lua with the
 * pod-record write to both copies and the slots generation, stream_record.lua, route_value.lua),
 * node.lua (the node history, adoptNode) and lib.lua (the clock, the lease and epoch checks), so
 * each exists once. The replica registry (a sorted set under the tag {<index>/ingesters})
 * and the streams' engine incarnations (incarnation:<d>, in the pod's group) are written here too,
 * so that every key of the index is named in KeySchema alone.
 *
 * Node changes. Every write that can show slots (apply, purge, publish, sweep) first compares the
 * live node history (INFO replication, read in the script) with the one the group's data was
 * written on. On another one (a promoted replica, which may lack the last acknowledged writes; a
 * restart that may have lost some) the same call retires every stream's slot, forgets every
 * watermark, empties every pod record and binds a new epoch to the node history, so every writer's
 * next call is RESET and every router drops its caches. O(streams + pods of the group), once per
 * node change. A cluster node that the group's slot moved to with its data (CLUSTER SETSLOT and
 * MIGRATE), proven by what it sees (node.lua, movedHere: the node the data was written on is
 * another, still a healthy primary, no primary is failing, its own history does not continue the
 * recorded one, the epoch came with the blocks), records itself and keeps the data and the
 * epoch. Readers cannot see the live node history in an HMGET: after a pause in a group's
 * answered reads longer than GroupState.VERIFY_AFTER_NANOS, a failed read or a reconnect (a
 * failover makes one of these for every router), a lookup first runs identity.lua and answers the
 * group unavailable while the node may not serve the data as it is.
 *
 * Writes. apply.lua checks the lease token (FENCED), then the watermark (DUPLICATE / GAP change
 * nothing), checks slot capacity before its first write (a failing script keeps its writes), then
 * applies the events in order and stores the watermark and the pod's liveness deadline (Redis
 * TIME) in the same atomic call. A stored block's locator follows from its parent's (a block with
 * no parent is block 0); a located block's entries, less dead slots', are copied into its
 * segment in the same call, and a block stored under a parent with no locator is counted as
 * unlocated until its field goes; its parent is noted, and the call that locates a noted parent
 * (or an unlocated block whose next block it does not store) lists that block's segment or span
 * field as an unlocated head. A sparse cache group's store (sliding window, chunked local, Mamba:
 * it keeps scattered blocks whose parents it mostly never kept) is located instead by its anchor,
 * the model's full-attention group: each block takes the locator of that group's block of the same
 * key (every group publishes the same key for the same token boundary), so it is mirrored into its
 * own group's segment or span of the full-attention head; one whose anchor block is not located is
 * unlocated, and the anchor's field noted as its parent. Every script is idempotent for a retried
 * duplicate: a batch that ran but whose reply was lost comes back DUPLICATE. A run of consecutive batches applied as one
 * call (first..seq, in one chunk) is checked by its first sequence and moves the watermark to its
 * last: a run that overlaps what is applied comes back DUPLICATE with the watermark.
 *
 * A call in chunks. A call of more blocks than applyChunkBlocks is applied in chunks, one script
 * each, cut where the call's ApplyPlan cuts it, and the stream record names the call in progress:
 * "<slot>|<wm>|<seq>:<blocks done>:<digest>[:x]". Blocks done count the call's positions (its
 * events' blocks in order, as its ApplyPlan counts them: an AllBlocksCleared one, each stored or
 * removed block one, a store the index drops none), the digest names its events,
 * not how they are cut (EventPacker), and x says the blocks done ended in a dropped token store. A
 * chunk is applied only if it starts at the blocks done of a call with the same sequence and digest,
 * or at block 0 of any other; otherwise nothing changes and the reply names the block to go on from.
 * A writer that packs the same events in chunks of another size (another applyChunkBlocks) thus
 * goes on at the exact block; one with other events for the batch (an owner's eviction model holds
 * back other stores, restores or removes other blocks than the former owner's did) applies its own
 * from block 0. The record's seq is the watermark's successor (it moves with the last chunk), and a
 * purge or a reset forgets the call in progress. Applying from block 0 after a part of another call
 * is safe because, for every block the new events name, what they leave does not depend on what
 * was applied before them:
 *   - an engine-key store sets, and a removal clears, one tier bit of the stream's entry: the last
 *     event naming a (block, tier) decides it, whatever the former call applied; a block's
 *     locator is written once and is the same from any store of it (a chain position never
 *     changes); its segment copy is rewritten from its value in the same call; the counts move
 *     with the entries' real changes, so a store of what the slot holds counts nothing;
 *   - AllBlocksCleared retires the slot the stream holds then (with whatever the former call wrote
 *     after its own clear), and the events after it land on a fresh slot, as they did;
 *   - what the former call applied that the new events do not name stays: an engine store the new
 *     owner holds back (the engine did store it; the new model has it pending or waiting), or the
 *     former model's restores and inferred removals (its guesses, as if it had finished). No event
 *     the engine published is skipped: a model holds back stores only, so every owner's events
 *     carry every removal and clear of the batch;
 *   - token-key events are not idempotent so: a store finds its parent's token key in the stream's
 *     map, which a removal later in the part applied may have dropped (the store would be dropped
 *     when applied again), and a removal of what is gone finds no key. But no model changes a
 *     token-keyed stream's events, so its calls always resume at the exact block, and x carries a
 *     dropped store's state to the piece that continues it. Consecutive batches given as one
 *     whose first is part applied would apply that part again from its first block: the script
 *     refuses them (PARTLY_APPLIED) and the writer applies them one at a time.
 *
 * Reads (RedisLookups; per group GroupState, what a router knows of it; LookupPlanner, which decides
 * each read and what its reply means, without I/O; GroupLookup, which makes the reads). A lookup of a group is one plain HMGET of the blocks hash (with
 * an HMGET of spec:routes by the prompt's first 19 segment and span fields beside it, on the same
 * connection): the slots generation, the unlocated heads, the holder records of the candidates the router has no
 * usable copy of, the first block's field (its locator shows that the keys start a segment) and
 * one segment field per 16 blocks of the prompt. While one of those fields is an unlocated head, or
 * when the keys start inside a segment, it reads the prompt's first FIRST_CHUNK block fields instead,
 * and an overflowed segment's 16 block fields in place of its segment field. One command reads one key atomically, so it sees a purge
 * entirely or not at all, and works unchanged on a cluster. Each router keeps the records it read
 * per group with the generation they were read at; a cached record stands for the current one while
 * the generation read with the blocks is the same (no record's slots changed since) and its deadline
 * has not passed (deadlines only move later, except with a slot change): in steady state a lookup
 * reads only the generation, the blocks and the routes, and each candidate's record once per liveness
 * period. If the generation moved, the lookup reads again with every candidate's record. Java drops
 * expired records (by Redis's clock, estimated by ServerClock), matches entries to the live slots
 * and computes depths, tier depths and scores, stopping at the first block no candidate still
 * matching holds. Longer prompts continue in chunks of 4x while some candidate matches, each read
 * taking the generation again; if it moved, the lookup is redone as one lookup.lua call. A live
 * candidate's routes (its digest in spec:routes) credit it with the prompt's blocks up to the
 * deepest kept key of theirs the prompt shares (a segment's head at least), as GPU blocks; a
 * confirmed entry supersedes them. A hybrid model's other cache groups are read in the same HMGET
 * (HybridPlan): their segment and span fields of the full-attention prompt's heads while that is
 * read by segments, else one block field per unit. Groups are looked up in parallel and merged.
 * Lookups use the router retry profile and report an incomplete result rather than fail. All
 * writers must move the generation: routers of this version must not share an index with
 * ingesters of an earlier one.
 */
package io.kvindex.index.redis;
