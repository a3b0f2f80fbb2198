package io.kvindex.index;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Turns lookup.lua's reply (pod records, then the values of the matched prefix's block fields) into
 * per-pod matches. Thread-safe (stateless).
 */
final class LookupDecoder {
  private static final int GPU = Tier.GPU.bit();
  private static final int GPU_CPU = Tier.GPU.bit() | Tier.CPU.bit();

  private LookupDecoder() {}

  static Map<String, PodMatch> decode(List<String> pods, List<Object> reply, IndexConfig config) {
    List<?> records = (List<?>) reply.get(0);
    List<Integer> streamPod = new ArrayList<>();
    List<Integer> streamRank = new ArrayList<>();
    Map<Integer, Integer> streamOfSlot = new HashMap<>();
    for (int p = 0; p < pods.size(); p++) {
      byte[] rec = (byte[]) records.get(p);
      if (rec == null) {
        continue;
      }
      for (int k = 8; k + 3 < rec.length; k += 4) {
        int slot = ((rec[k] & 0xff) << 8) | (rec[k + 1] & 0xff);
        streamOfSlot.put(slot, streamPod.size());
        streamPod.add(p);
        streamRank.add(((rec[k + 2] & 0xff) << 8) | (rec[k + 3] & 0xff));
      }
    }
    int streams = streamPod.size();
    int[] any = new int[streams];
    int[] gpu = new int[streams];
    int[] gpuCpu = new int[streams];
    double[] score = new double[streams];
    double[] weight = new double[16];
    for (int mask = 0; mask < 16; mask++) {
      weight[mask] = config.bestWeight(mask);
    }
    int[] tiers = new int[streams];
    for (int i = 1; i < reply.size(); i++) {
      java.util.Arrays.fill(tiers, 0);
      byte[] value = (byte[]) reply.get(i);
      for (int e = 0; e + 1 < value.length; e += 2) {
        Integer s = streamOfSlot.get(((value[e] & 0xff) << 4) | ((value[e + 1] & 0xf0) >>> 4));
        if (s != null) {
          tiers[s] = value[e + 1] & 0x0f;
        }
      }
      int block = i - 1;
      for (int s = 0; s < streams; s++) {
        int t = tiers[s];
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
    return matches(pods, streamPod, streamRank, any, gpu, gpuCpu, score);
  }

  private static Map<String, PodMatch> matches(
      List<String> pods,
      List<Integer> streamPod,
      List<Integer> streamRank,
      int[] any,
      int[] gpu,
      int[] gpuCpu,
      double[] score) {
    Map<String, PodMatch> out = new LinkedHashMap<>();
    for (int p = 0; p < pods.size(); p++) {
      int depth = 0;
      int gpuDepth = 0;
      int gpuCpuDepth = 0;
      double best = 0;
      Map<Integer, Integer> ranks = new HashMap<>();
      for (int s = 0; s < streamPod.size(); s++) {
        if (streamPod.get(s) == p) {
          depth = Math.max(depth, any[s]);
          gpuDepth = Math.max(gpuDepth, gpu[s]);
          gpuCpuDepth = Math.max(gpuCpuDepth, gpuCpu[s]);
          best = Math.max(best, score[s]);
          if (any[s] > 0) {
            ranks.put(streamRank.get(s), any[s]);
          }
        }
      }
      out.put(pods.get(p), new PodMatch(pods.get(p), depth, gpuDepth, gpuCpuDepth, best, ranks));
    }
    return out;
  }
}
