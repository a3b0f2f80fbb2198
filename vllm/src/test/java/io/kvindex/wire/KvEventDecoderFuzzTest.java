package io.kvindex.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Property-based fuzzing: whatever the bytes, the decoder returns a batch or throws {@link
 * MalformedEventException}, quickly, allocating no more than the payload justifies.
 */
class KvEventDecoderFuzzTest {
  private static final long SEED = 0x6b76696e646578L;

  /** Headers that claim far more than any payload holds: arrays, maps, strings, bins, ext. */
  private static final String[] HUGE_HEADERS = {
    "dd7fffffff", "dd80000000", "ddffffffff", "dc ffff", "df7fffffff", "dfffffffff", "de ffff",
    "db7fffffff", "dbffffffff", "da ffff", "d9ff", "c67fffffff", "c6ffffffff", "c5ffff",
    "c9 7fffffff 01", "cf", "cb"
  };

  /** Per decode: a fixed allowance for the unpacker plus a generous factor of the payload size. */
  private static final long FIXED_ALLOWANCE = 256 * 1024;

  private static final long PER_BYTE_ALLOWANCE = 200;

  @Test
  void decode_randomBytes_onlyTypedErrors() {
    assertTimeoutPreemptively(
        Duration.ofSeconds(60),
        () -> {
          Random random = new Random(SEED);
          warmUp();
          for (int i = 0; i < 20_000; i++) {
            byte[] payload = new byte[random.nextInt(48)];
            random.nextBytes(payload);
            if (payload.length > 0 && random.nextBoolean()) {
              payload[0] = (byte) (0x90 | random.nextInt(4)); // start like a batch array
            }
            decodeChecked(payload, "random #" + i);
          }
        });
  }

  @Test
  void decode_mutatedValidPayloads_onlyTypedErrors() {
    assertTimeoutPreemptively(
        Duration.ofSeconds(60),
        () -> {
          Random random = new Random(SEED + 1);
          List<byte[]> seeds = validPayloads(random);
          warmUp();
          int cases = 0;
          for (int i = 0; i < 40_000; i++) {
            byte[] valid = seeds.get(random.nextInt(seeds.size()));
            byte[] mutated =
                switch (random.nextInt(4)) {
                  case 0 -> flipBytes(valid, random);
                  case 1 -> Arrays.copyOf(valid, random.nextInt(valid.length));
                  case 2 -> insertHugeHeader(valid, random);
                  default -> overwriteWithHugeHeader(valid, random);
                };
            decodeChecked(mutated, "mutation #" + i);
            cases++;
          }
          assertThat(cases).isEqualTo(40_000);
        });
  }

  @Test
  void decode_everyTruncationOfEveryFixture_failsTyped() {
    assertTimeoutPreemptively(
        Duration.ofSeconds(60),
        () -> {
          for (WireEra era : WireEra.values()) {
            byte[] valid = WireFixtures.hex(WireFixtures.fixtureName(era));
            for (int length = 0; length < valid.length; length++) {
              byte[] truncated = Arrays.copyOf(valid, length);
              try {
                KvEventDecoder.decode(truncated);
                fail("decoded a truncation to %d bytes of the %s fixture", length, era);
              } catch (MalformedEventException expected) {
                assertThat(expected.offset()).isBetween(0L, (long) length);
              }
            }
          }
        });
  }

  @Test
  void decode_twelveBytesClaimingTwoToThe31Elements_failsWithoutAllocating() {
    byte[] payload = HexFormat.of().parseHex("dd80000000c0c0c0c0c0c0c0");
    byte[] justBelow = HexFormat.of().parseHex("dd7fffffffc0c0c0c0c0c0c0");
    warmUp();
    Runtime runtime = Runtime.getRuntime();
    long heapBefore = runtime.totalMemory() - runtime.freeMemory();

    assertTimeoutPreemptively(
        Duration.ofSeconds(5),
        () -> {
          for (int i = 0; i < 1000; i++) {
            decodeChecked(payload, "2^31 claim");
            decodeChecked(justBelow, "2^31-1 claim");
          }
        });

    long heapGrowth = runtime.totalMemory() - runtime.freeMemory() - heapBefore;
    assertThat(heapGrowth).isLessThan(64L * 1024 * 1024);
  }

  /**
   * Loads and initialises every class a decode can touch (exceptions, messages), so that the
   * allocation check sees the decode itself, not one-time class loading.
   */
  private static void warmUp() {
    for (WireEra era : WireEra.values()) {
      byte[] valid = WireFixtures.hex(WireFixtures.fixtureName(era));
      for (int length = 0; length <= valid.length; length++) {
        try {
          KvEventDecoder.decode(Arrays.copyOf(valid, length));
        } catch (MalformedEventException expected) {
          // warming up the failure path too
        }
      }
    }
    Random random = new Random(SEED - 1);
    for (int i = 0; i < 2000; i++) {
      byte[] payload = new byte[random.nextInt(32)];
      random.nextBytes(payload);
      try {
        KvEventDecoder.decode(payload);
      } catch (MalformedEventException expected) {
        // warming up the failure path too
      }
    }
  }

  private static List<byte[]> validPayloads(Random random) {
    List<byte[]> payloads = new ArrayList<>();
    for (WireEra era : WireEra.values()) {
      payloads.add(WireFixtures.hex(WireFixtures.fixtureName(era)));
    }
    payloads.add(WireFixtures.hex("worked-example-map.hex"));
    RandomBatches batches = new RandomBatches(random.nextLong());
    for (int i = 0; i < 60; i++) {
      WireEra era = WireEra.values()[i % WireEra.values().length];
      HashEncoding hashes = HashEncoding.values()[i % HashEncoding.values().length];
      payloads.add(KvEventEncoder.of(era, hashes).encode(batches.batch()));
    }
    return payloads;
  }

  private static byte[] flipBytes(byte[] valid, Random random) {
    byte[] copy = valid.clone();
    int flips = 1 + random.nextInt(3);
    for (int i = 0; i < flips && copy.length > 0; i++) {
      copy[random.nextInt(copy.length)] = (byte) random.nextInt(256);
    }
    return copy;
  }

  private static byte[] insertHugeHeader(byte[] valid, Random random) {
    byte[] header = hugeHeader(random);
    int at = random.nextInt(valid.length + 1);
    byte[] out = new byte[valid.length + header.length];
    System.arraycopy(valid, 0, out, 0, at);
    System.arraycopy(header, 0, out, at, header.length);
    System.arraycopy(valid, at, out, at + header.length, valid.length - at);
    return out;
  }

  private static byte[] overwriteWithHugeHeader(byte[] valid, Random random) {
    byte[] header = hugeHeader(random);
    byte[] out = valid.clone();
    int at = random.nextInt(out.length);
    System.arraycopy(header, 0, out, at, Math.min(header.length, out.length - at));
    return out;
  }

  private static byte[] hugeHeader(Random random) {
    return HexFormat.of()
        .parseHex(HUGE_HEADERS[random.nextInt(HUGE_HEADERS.length)].replace(" ", ""));
  }

  /** Decodes; anything but success or MalformedEventException, or too much allocation, fails. */
  private static void decodeChecked(byte[] payload, String label) {
    Throwable thrown = null;
    long before = allocatedBytes();
    try {
      KvEventDecoder.decode(payload);
    } catch (Throwable t) {
      thrown = t;
    }
    long allocated = allocatedBytes() - before;
    if (thrown != null && !(thrown instanceof MalformedEventException)) {
      throw new AssertionError(
          label + ": " + thrown + " for " + HexFormat.of().formatHex(payload), thrown);
    }
    if (thrown instanceof MalformedEventException e
        && (e.offset() < 0 || e.offset() > payload.length)) {
      throw new AssertionError(label + ": offset out of the payload in " + e.getMessage());
    }
    long allowance = FIXED_ALLOWANCE + PER_BYTE_ALLOWANCE * payload.length;
    if (allocated > allowance) {
      throw new AssertionError(
          label
              + ": allocated "
              + allocated
              + " bytes for a "
              + payload.length
              + "-byte payload: "
              + HexFormat.of().formatHex(payload));
    }
  }

  private static long allocatedBytes() {
    return ((com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean())
        .getThreadAllocatedBytes(Thread.currentThread().getId());
  }
}
