package io.kvindex.router.http;

import io.kvindex.router.KvRouterBuilder;
import io.kvindex.router.PickPolicy;
import io.kvindex.service.Durations;
import io.kvindex.service.Setting;
import java.util.Arrays;
import java.util.List;

/**
 * Every setting of the router service, declared once: key, flag, environment variable, file key,
 * default and description. Library defaults come from the library's own constants.
 */
enum RouterSetting {
  LISTEN(
      Setting.of(
          "listen",
          "127.0.0.1:8190",
          "HOST:PORT",
          "Address to serve on (port 0 picks a free one)")),
  REDIS_URI(
      Setting.of(
          "redis-uri",
          KvRouterBuilder.DEFAULT_REDIS_URI,
          "URI",
          "redis://[user:password@]host:port (rediss:// for TLS),"
              + " redis-cluster://host1:port1,host2:port2, or"
              + " redis-sentinel://[password@]s1:p1,s2:p2#master")),
  REDIS_TLS_CA_FILE(
      Setting.optional(
          "redis-tls-ca-file",
          "none: the JVM's trust store",
          "FILE",
          "PEM file of the CA certificates a rediss:// server's certificate is checked against")),
  CLUSTER_SEED(
      Setting.optional(
              "cluster-seed",
              "none",
              "URI",
              "A Redis Cluster seed node URI; repeat for more (comma-separated in the"
                  + " environment). Replaces --redis-uri")
          .repeatable(",")),
  INDEX_NAME(
      Setting.of(
              "index-name",
              KvRouterBuilder.DEFAULT_INDEX_NAME,
              "NAME",
              "Index name, as the ingesters use it")
          .flags("--index-name", "--index")),
  INDEX_GROUPS(Setting.of("index-groups", "1", "N", "Index groups, as the ingesters use them")),
  MODEL(
      Setting.optional(
              "model",
              "none",
              "NAME=KEYS",
              "A model's key mode, repeatable (comma-separated in the environment):"
                  + " NAME=engine:<algo>:<seed>:<blockSize> or NAME=token:<blockSize>")
          .repeatable(",")),
  DEFAULT_KEYS(
      Setting.optional(
          "default-keys",
          "none: unknown models are refused",
          "KEYS",
          "Key mode of models not named by --model")),
  LOOKUP_BUDGET(
      Setting.of(
          "lookup-budget",
          Durations.format(KvRouterBuilder.DEFAULT_LOOKUP_BUDGET),
          "DURATION",
          "Longest time one lookup may take, retries included; past it the answer is 'index"
              + " unavailable'")),
  THREADS(
      Setting.of(
          "threads",
          "8",
          "N",
          "Request threads (queue 1024 each; past it the accepting thread serves the request)")),
  IMBALANCE_ABSOLUTE(
      Setting.of(
          "imbalance-absolute",
          number(PickPolicy.DEFAULT_IMBALANCE_ABSOLUTE),
          "LOAD",
          "Pick guard: load units above the least loaded pod")),
  IMBALANCE_RATIO(
      Setting.of(
          "imbalance-ratio",
          number(PickPolicy.DEFAULT_IMBALANCE_RATIO),
          "FACTOR",
          "Pick guard: factor over the least loaded pod"));

  final Setting setting;

  RouterSetting(Setting setting) {
    this.setting = setting;
  }

  /** Every declaration, in order. */
  static List<Setting> all() {
    return Arrays.stream(values()).map(s -> s.setting).toList();
  }

  private static String number(double value) {
    return value == Math.rint(value) ? Long.toString((long) value) : Double.toString(value);
  }
}
