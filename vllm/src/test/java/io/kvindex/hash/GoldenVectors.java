package io.kvindex.hash;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The llm-d golden vector (vLLM with {@code PYTHONHASHSEED=42}, {@code sha256_cbor}, block size 16,
 * model Qwen/Qwen3-0.6B): 400 token ids and the 25 block hashes vLLM reported for them. Shared with
 * other modules' tests through the test-jar. Thread-safe (constants).
 */
public final class GoldenVectors {
  /** Classpath resource with the 400 token ids, separated by commas and new lines. */
  public static final String TOKENS_RESOURCE = "/hash/golden-base-tokens.txt";

  /** Seed, algorithm and block size the golden hashes were made with. */
  public static final String SEED = "42";

  public static final int BLOCK_SIZE = 16;

  private static final String[] BASE_HASHES = {
    "17705339885301241772", "13360521540053240825", "1652464311825922890",
    "12860800319228078273", "3450323724325539335", "3228310428562727993",
    "6148655630810427752", "7247902503758347614", "13398480267478892921",
    "16001393832065633136", "5465193924169978467", "10089890520785644009",
    "422920441552050324", "15899806193804522047", "8393642862922256935",
    "6252039273099455613", "4984351404723017020", "17333094528838329214",
    "18308444338606176786", "337201363510575849", "9210643397516082020",
    "293096018719580475", "18388723977999946127", "5490930151665639282",
    "1902323794085395034"
  };

  private GoldenVectors() {}

  /** The 25 expected block hashes (unsigned 64-bit, as Java long bits). */
  public static long[] baseHashes() {
    return Arrays.stream(BASE_HASHES).mapToLong(Long::parseUnsignedLong).toArray();
  }

  /** The expected block hashes in decimal, as vLLM prints them. */
  public static String[] baseHashesDecimal() {
    return BASE_HASHES.clone();
  }

  /** The text of the token resource. */
  public static String tokensText() {
    try (InputStream in = GoldenVectors.class.getResourceAsStream(TOKENS_RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException("missing test resource " + TOKENS_RESOURCE);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The 400 golden token ids. */
  public static int[] tokens() {
    return Arrays.stream(tokensText().trim().split("[,\\s]+"))
        .mapToInt(Integer::parseInt)
        .toArray();
  }
}
