package io.kvindex.ingester;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.hash.HashAlgorithm;
import io.kvindex.index.KeyCheckNote;
import io.kvindex.index.KeyCheckNote.Verdict;
import io.kvindex.ingester.stream.StreamStatus;
import io.kvindex.inspect.IndexReport;
import io.kvindex.inspect.RedisInspector;
import io.kvindex.simulator.PodConfig;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Optional;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The key check: simulated vLLM pods publish real msgpack events over ZeroMQ, hashing one way; the
 * routers' keys are noted in a real Redis; the ingester recomputes sampled stores and says what the
 * engines use.
 */
@UsesRedis
class KeyCheckTest {
  private static final Duration WAIT = Duration.ofSeconds(20);
  private static final String MODEL = Fleet.MODEL;

  private Rig rig;
  private Fleet fleet;

  @BeforeEach
  void setUp(RedisStandalone redis) {
    rig = new Rig(redis);
  }

  @AfterEach
  void tearDown() {
    rig.close();
    if (fleet != null) {
      fleet.close();
    }
  }

  @Test
  void keyCheck_engineSha256RouterToldSha256Cbor_namesSha256() {
    KeyCheckNote note =
        mismatchOf(
            b -> b.hashAlgorithm(HashAlgorithm.SHA256).hashSeed(null),
            "engine:sha256_cbor:16",
            "engine");
    assertThat(note.engines()).isEqualTo("engine:sha256:16");
    assertThat(note.detail())
        .contains("routers are told engine:sha256_cbor:16")
        .contains("--model " + MODEL + "=engine:sha256:16");
  }

  @Test
  void keyCheck_routerToldASeedTheEnginesLack_namesTheDefaultSeed() {
    KeyCheckNote note =
        mismatchOf(
            b -> b.hashAlgorithm(HashAlgorithm.SHA256_CBOR).hashSeed(null),
            "engine:sha256_cbor:42:16",
            "engine");
    assertThat(note.engines()).isEqualTo("engine:sha256_cbor:16");
  }

  @Test
  void keyCheck_enginesHashWithASeedTheRoutersLack_saysNoFormReproducesIt() {
    KeyCheckNote note =
        mismatchOf(
            b -> b.hashAlgorithm(HashAlgorithm.SHA256_CBOR).hashSeed("42"),
            "engine:sha256_cbor:16",
            "engine");
    assertThat(note.engines()).isNull();
    assertThat(note.detail())
        .contains("no known form reproduces")
        .contains("PYTHONHASHSEED")
        .contains("token:16");
  }

  @Test
  void keyCheck_routerToldAnotherBlockSize_namesTheEnginesBlockSize() {
    KeyCheckNote note =
        mismatchOf(
            b -> b.hashAlgorithm(HashAlgorithm.SHA256).hashSeed(null),
            "engine:sha256:32",
            "engine");
    assertThat(note.engines()).isEqualTo("engine:sha256:16");
  }

  @Test
  void keyCheck_tokenModeRouterToldAnotherBlockSize_namesTheEnginesBlockSize() {
    KeyCheckNote note = mismatchOf(b -> b, "token:32", "token");
    assertThat(note.engines()).isEqualTo("token:16");
    assertThat(note.detail()).contains("blocks of 16 tokens");
  }

  @Test
  void keyCheck_routerKeysMatch_countsMatchesAndReportsNothing() throws Exception {
    fleet = Fleet.start(1, 42, b -> b.hashAlgorithm(HashAlgorithm.SHA256).hashSeed(null));
    rig.index().noteReaderKeysAsync(MODEL, "engine:sha256:16").join();
    Ingester ingester = start("engine");
    Await.until(
        WAIT,
        "matches counted",
        () -> {
          fleet.traffic(2);
          return matches(ingester) >= 3;
        });
    assertThat(mismatches(ingester)).isZero();
    assertThat(ingester.meterRegistry().scrape())
        .contains(
            "kvindex_ingester_key_checks_total{model=\"" + MODEL + "\",outcome=\"mismatch\"} 0.0");
    assertThat(readyz(ingester)).doesNotContain("keys differ");
    Await.until(
        WAIT, "the note kept", () -> stored().map(n -> n.verdict() == Verdict.MATCH).orElse(false));
    assertThat(stored().orElseThrow().engines()).isEqualTo("engine:sha256:16");
  }

  @Test
  void keyCheck_noRouterNotedKeys_namesWhatTheEnginesUseWithoutCounting() {
    fleet = Fleet.start(1, 42, b -> b.hashAlgorithm(HashAlgorithm.SHA256).hashSeed(null));
    Ingester ingester = start("engine");
    Await.until(
        WAIT,
        "the engines' keys found",
        () -> {
          fleet.traffic(2);
          return stored().map(n -> n.verdict() == Verdict.UNCONFIGURED).orElse(false);
        });
    assertThat(stored().orElseThrow().engines()).isEqualTo("engine:sha256:16");
    assertThat(matches(ingester) + mismatches(ingester)).isZero();
    assertThat(readyz(ingester)).doesNotContain("keys differ");
  }

  /**
   * Pods hashing as {@code pods} says, routers told {@code routerKeys}: waits for the mismatch in
   * the metric, /readyz, the note in Redis and inspect's report, and returns the note.
   */
  private KeyCheckNote mismatchOf(
      UnaryOperator<PodConfig.Builder> pods, String routerKeys, String keyMode) {
    fleet = Fleet.start(1, 42, pods);
    rig.index().noteReaderKeysAsync(MODEL, routerKeys).join();
    Ingester ingester = start(keyMode);
    Await.until(
        WAIT,
        "the mismatch found",
        () -> {
          fleet.traffic(2);
          return stored().map(n -> n.verdict() == Verdict.MISMATCH).orElse(false);
        });
    assertThat(mismatches(ingester)).isPositive();
    assertThat(matches(ingester)).isZero();
    KeyCheckNote note = stored().orElseThrow();
    assertThat(note.configured()).isEqualTo(routerKeys);
    assertThat(readyz(ingester))
        .startsWith("ready: ")
        .contains("keys differ for model '" + MODEL + "'")
        .contains(note.detail());
    IndexReport report = RedisInspector.of(rig.connector(), Rig.INDEX).read(MODEL, null);
    assertThat(report.models())
        .singleElement()
        .satisfies(m -> assertThat(m.keyCheck()).isEqualTo(note));
    return note;
  }

  private Ingester start(String keyMode) {
    Ingester ingester =
        rig.start("r1", fleet.specs(keyMode), b -> b.keyCheckInterval(Duration.ofMillis(1)));
    Await.until(
        WAIT,
        "the stream running",
        () ->
            ingester.workers().values().stream()
                    .allMatch(w -> w.status().state() == StreamStatus.State.RUNNING)
                && !ingester.workers().isEmpty());
    ingester.keyChecks().refresh();
    return ingester;
  }

  private Optional<KeyCheckNote> stored() {
    return rig.index().keyCheckAsync(MODEL).join();
  }

  private static double matches(Ingester ingester) {
    return ingester.metrics().value("kvindex.ingester.key.checks", "outcome", "match");
  }

  private static double mismatches(Ingester ingester) {
    return ingester.metrics().value("kvindex.ingester.key.checks", "outcome", "mismatch");
  }

  private static String readyz(Ingester ingester) throws RuntimeException {
    try {
      return HttpClient.newHttpClient()
          .send(
              HttpRequest.newBuilder(
                      URI.create("http://127.0.0.1:" + ingester.httpPort() + "/readyz"))
                  .build(),
              HttpResponse.BodyHandlers.ofString())
          .body();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }
}
