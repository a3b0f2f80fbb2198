package io.kvindex.index.redis;

import java.util.List;

/**
 * Which streams the candidates' records give and which slot feeds which stream: what a decoder
 * reads with, worked out from the records alone, so that lookups of the same candidates with the
 * same records share one. Immutable (its arrays are never changed once made).
 */
final class StreamLayout {
  /** The rank of a candidate's rank-less (speculative-only) stream. */
  static final int NO_RANK = -1;

  private static final int SLOTS = 4096;

  final int[] streamRank;
  final int[][] streamsOfPod;
  final int[] streamOfSlot;

  private StreamLayout(int[] streamRank, int[][] streamsOfPod, int[] streamOfSlot) {
    this.streamRank = streamRank;
    this.streamsOfPod = streamsOfPod;
    this.streamOfSlot = streamOfSlot;
  }

  /**
   * @param records per candidate, its pod record (8-byte deadline, then (slot u16, rank u16)
   *     pairs), or null when unknown or expired
   * @param speculative whether runs may carry speculative marks: each candidate with a record that
   *     lists no stream then gets a rank-less one, which only marks can feed
   */
  static StreamLayout of(List<byte[]> records, boolean speculative) {
    int streams = 0;
    for (byte[] rec : records) {
      streams += ownStreams(rec, speculative);
    }
    int[] streamRank = new int[streams];
    int[][] streamsOfPod = new int[records.size()][];
    int[] streamOfSlot = new int[highestSlot(records) + 1];
    int next = 0;
    for (int p = 0; p < records.size(); p++) {
      byte[] rec = records.get(p);
      int own = ownStreams(rec, speculative);
      int[] mine = new int[own];
      for (int k = 8, i = 0; rec != null && k + 3 < rec.length; k += 4, i++) {
        int slot = ((rec[k] & 0xff) << 8) | (rec[k + 1] & 0xff);
        if (slot > 0 && slot < SLOTS) {
          streamOfSlot[slot] = next + 1;
        }
        mine[i] = next;
        streamRank[next++] = PodRecord.rankAt(rec, k);
      }
      if (own == 1 && ownStreams(rec, false) == 0) {
        mine[0] = next;
        streamRank[next++] = NO_RANK;
      }
      streamsOfPod[p] = mine;
    }
    return new StreamLayout(streamRank, streamsOfPod, streamOfSlot);
  }

  int streams() {
    return streamRank.length;
  }

  /** The streams of candidate {@code p}, in the order of its record. */
  int[] streamsOf(int p) {
    return streamsOfPod[p];
  }

  /** A stream's rank, or -1 for a candidate's rank-less (speculative-only) stream. */
  int rankOf(int stream) {
    return streamRank[stream];
  }

  /** A record's streams: its (slot, rank) pairs, or one rank-less stream for speculation. */
  private static int ownStreams(byte[] rec, boolean speculative) {
    if (rec == null) {
      return 0;
    }
    int pairs = Math.max(0, (rec.length - PodRecord.DEADLINE_BYTES) / PodRecord.PAIR_BYTES);
    return pairs == 0 && speculative ? 1 : pairs;
  }

  /** The highest valid slot the records list, 0 for none. */
  private static int highestSlot(List<byte[]> records) {
    int highest = 0;
    for (byte[] rec : records) {
      for (int k = PodRecord.DEADLINE_BYTES;
          rec != null && k + PodRecord.PAIR_BYTES <= rec.length;
          k += PodRecord.PAIR_BYTES) {
        int slot = PodRecord.slotAt(rec, k);
        if (slot < SLOTS) {
          highest = Math.max(highest, slot);
        }
      }
    }
    return highest;
  }
}
