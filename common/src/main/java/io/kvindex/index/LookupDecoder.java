package io.kvindex.index;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Turns lookup.lua's reply (pod records, then runs of (block value, speculative mark) covering the
 * matched prefix) into per-pod matches. A block a pod holds speculatively counts as held on the GPU
 * by each of its streams, and by one extra rank-less stream for pods with no record yet.
 * Thread-safe (stateless).
 */
final class LookupDecoder {
  private static final int GPU = Tier.GPU.bit();
  private static final int GPU_CPU = Tier.GPU.bit() | Tier.CPU.bit();
  private static final int NO_RANK = -1;

  private LookupDecoder() {}

  static Map<String, PodMatch> decode(List<String> pods, List<Object> reply, IndexConfig config) {
    List<?> records = (List<?>) reply.get(0);
    List<Integer> streamPod = new ArrayList<>();
    List<Integer> streamRank = new ArrayList<>();
    Map<Integer, Integer> streamOfSlot = new HashMap<>();
    List<List<Integer>> streamsOfPod = new ArrayList<>();
    for (int p = 0; p < pods.size(); p++) {
      List<Integer> own = new ArrayList<>();
      byte[] rec = (byte[]) records.get(p);
      for (int k = 8; rec != null && k + 3 < rec.length; k += 4) {
        int slot = ((rec[k] & 0xff) << 8) | (rec[k + 1] & 0xff);
        streamOfSlot.put(slot, streamPod.size());
        own.add(streamPod.size());
        streamPod.add(p);
        streamRank.add(((rec[k + 2] & 0xff) << 8) | (rec[k + 3] & 0xff));
      }
      own.add(streamPod.size());
      streamPod.add(p);
      streamRank.add(NO_RANK);
      streamsOfPod.add(own);
    }
    int streams = streamPod.size();
    int[] any = new int[streams];
    int[] confirmed = new int[streams];
    int[] gpu = new int[streams];
    int[] gpuCpu = new int[streams];
    double[] score = new double[streams];
    double[] weight = new double[16];
    for (int mask = 0; mask < 16; mask++) {
      weight[mask] = config.bestWeight(mask);
    }
    int[] tiers = new int[streams];
    int[] held = new int[streams];
    int block = 0;
    for (int i = 1; i + 2 < reply.size(); i += 3) {
      Arrays.fill(tiers, 0);
      byte[] value = (byte[]) reply.get(i);
      for (int e = 0; e + 1 < value.length; e += 2) {
        Integer s = streamOfSlot.get(((value[e] & 0xff) << 4) | ((value[e + 1] & 0xf0) >>> 4));
        if (s != null) {
          tiers[s] = value[e + 1] & 0x0f;
        }
      }
      System.arraycopy(tiers, 0, held, 0, streams);
      byte[] mark = (byte[]) reply.get(i + 1);
      for (int m = 0; m + 1 < mark.length; m += 2) {
        int p = (((mark[m] & 0xff) << 8) | (mark[m + 1] & 0xff)) - 1;
        for (int s : streamsOfPod.get(p)) {
          held[s] |= GPU;
        }
      }
      long run = (Long) reply.get(i + 2);
      for (long r = 0; r < run; r++, block++) {
        for (int s = 0; s < streams; s++) {
          if (confirmed[s] == block && tiers[s] != 0) {
            confirmed[s]++;
          }
          int t = held[s];
          if (any[s] == block && t != 0) {
            any[s]++;
            score[s] += weight[t];
          }
          if (gpu[s] == block && (t & GPU) != 0) {
            gpu[s]++;
          }
          if (gpuCpu[s] == block && (t & GPU_CPU) != 0) {
            gpuCpu[s]++;
          }
        }
      }
    }
    Map<String, PodMatch> out = new LinkedHashMap<>();
    for (int p = 0; p < pods.size(); p++) {
      out.put(
          pods.get(p),
          match(pods.get(p), streamsOfPod.get(p), streamRank, any, confirmed, gpu, gpuCpu, score));
    }
    return out;
  }

  private static PodMatch match(
      String pod,
      List<Integer> own,
      List<Integer> streamRank,
      int[] any,
      int[] confirmed,
      int[] gpu,
      int[] gpuCpu,
      double[] score) {
    int depth = 0;
    int confirmedDepth = 0;
    int gpuDepth = 0;
    int gpuCpuDepth = 0;
    double best = 0;
    Map<Integer, Integer> ranks = new HashMap<>();
    for (int s : own) {
      depth = Math.max(depth, any[s]);
      confirmedDepth = Math.max(confirmedDepth, confirmed[s]);
      gpuDepth = Math.max(gpuDepth, gpu[s]);
      gpuCpuDepth = Math.max(gpuCpuDepth, gpuCpu[s]);
      best = Math.max(best, score[s]);
      if (any[s] > 0 && streamRank.get(s) != NO_RANK) {
        ranks.put(streamRank.get(s), any[s]);
      }
    }
    return new PodMatch(pod, depth, gpuDepth, gpuCpuDepth, best, ranks, depth > confirmedDepth);
  }
}
