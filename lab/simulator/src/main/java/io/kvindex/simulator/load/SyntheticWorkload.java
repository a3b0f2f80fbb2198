package io.kvindex.simulator.load;

import io.kvindex.simulator.InferenceRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Random;

/**
 * A seeded multi-tenant chat workload: each tenant has a system prompt and a pool of running
 * conversations; tenants are picked by a Zipf law; a request either opens a conversation (system
 * prompt + a user turn) or continues one (its whole history, the previous answers included, + a new
 * user turn), so prefixes are shared within a tenant and grow along a conversation. Arrivals are
 * Poisson at {@link Options#ratePerSecond()}. Endless; not thread-safe.
 */
public final class SyntheticWorkload implements Workload {
  private final Options options;
  private final Random random;
  private final double[] zipfCdf;
  private final int[][] systemPrompts;
  private final List<List<int[]>> conversations = new ArrayList<>();
  private double clockSeconds;
  private long counter;

  SyntheticWorkload(Options options) {
    this.options = Objects.requireNonNull(options, "options");
    this.random = new Random(options.seed());
    this.zipfCdf = zipfCdf(options.tenants(), options.zipfExponent());
    this.systemPrompts = new int[options.tenants()][];
    for (int t = 0; t < options.tenants(); t++) {
      int length = Math.max(1, (int) (options.systemPromptTokens() * (0.5 + random.nextDouble())));
      systemPrompts[t] = MooncakeTrace.uniqueTokens(0x7E4A17L * (t + 1), length);
      conversations.add(new ArrayList<>());
    }
  }

  private static double[] zipfCdf(int n, double exponent) {
    double[] cdf = new double[n];
    double sum = 0;
    for (int i = 0; i < n; i++) {
      sum += 1 / Math.pow(i + 1, exponent);
      cdf[i] = sum;
    }
    for (int i = 0; i < n; i++) {
      cdf[i] /= sum;
    }
    return cdf;
  }

  @Override
  public boolean hasNext() {
    return true;
  }

  @Override
  public TimedRequest next() {
    clockSeconds += -Math.log(1 - random.nextDouble()) / options.ratePerSecond();
    int tenant = tenant();
    List<int[]> pool = conversations.get(tenant);
    int[] history;
    int slot;
    if (pool.isEmpty() || random.nextDouble() < options.newConversationProbability()) {
      history = systemPrompts[tenant];
      slot = -1;
    } else {
      slot = random.nextInt(pool.size());
      history = pool.get(slot);
    }
    counter++;
    int[] user = MooncakeTrace.uniqueTokens(0xC0FFEEL + counter, length(options.userTokens()));
    int[] prompt = concat(history, user);
    int[] output = MooncakeTrace.uniqueTokens(0xBEEFL + counter, length(options.outputTokens()));
    remember(pool, slot, concat(prompt, output), prompt.length);
    String model =
        options.models().isEmpty() ? null : options.models().get(tenant % options.models().size());
    return new TimedRequest(
        Duration.ofNanos((long) (clockSeconds * 1e9)), model, InferenceRequest.of(prompt, output));
  }

  private void remember(List<int[]> pool, int slot, int[] conversation, int promptLength) {
    boolean tooLong = promptLength > options.maxPromptTokens() / 2;
    if (slot >= 0) {
      if (tooLong) {
        pool.remove(slot);
      } else {
        pool.set(slot, conversation);
      }
    } else if (!tooLong) {
      if (pool.size() >= options.conversationsPerTenant()) {
        pool.remove(random.nextInt(pool.size()));
      }
      pool.add(conversation);
    }
  }

  private int tenant() {
    int i = Arrays.binarySearch(zipfCdf, random.nextDouble());
    return Math.min(i < 0 ? -i - 1 : i, zipfCdf.length - 1);
  }

  /** A length around {@code mean}: uniform in [mean/2, 3 mean/2], at least 1. */
  private int length(int mean) {
    return Math.max(1, mean / 2 + random.nextInt(Math.max(1, mean + 1)));
  }

  private static int[] concat(int[] a, int[] b) {
    int[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  /**
   * The generator's settings; start from {@link #defaults()}. Immutable and thread-safe.
   *
   * @param tenants tenants (distinct system prompts)
   * @param zipfExponent skew of tenant popularity (0 = uniform)
   * @param systemPromptTokens mean system-prompt length
   * @param userTokens mean length of a user turn
   * @param outputTokens mean answer length
   * @param newConversationProbability chance a request opens a conversation
   * @param conversationsPerTenant running conversations kept per tenant
   * @param maxPromptTokens conversations stop growing past half of this
   * @param ratePerSecond mean arrival rate
   * @param models models assigned to tenants in turn (empty: the fleet's first model)
   * @param seed the random seed
   */
  public record Options(
      int tenants,
      double zipfExponent,
      int systemPromptTokens,
      int userTokens,
      int outputTokens,
      double newConversationProbability,
      int conversationsPerTenant,
      int maxPromptTokens,
      double ratePerSecond,
      List<String> models,
      long seed) {

    public Options {
      positive(tenants, "tenants");
      positive(systemPromptTokens, "systemPromptTokens");
      positive(userTokens, "userTokens");
      positive(outputTokens, "outputTokens");
      positive(conversationsPerTenant, "conversationsPerTenant");
      positive(maxPromptTokens, "maxPromptTokens");
      if (!(zipfExponent >= 0)) {
        throw new IllegalArgumentException("zipfExponent must be >= 0, got " + zipfExponent);
      }
      if (!(newConversationProbability >= 0 && newConversationProbability <= 1)) {
        throw new IllegalArgumentException(
            "newConversationProbability must be within [0, 1], got " + newConversationProbability);
      }
      if (!(ratePerSecond > 0)) {
        throw new IllegalArgumentException("ratePerSecond must be > 0, got " + ratePerSecond);
      }
      models = List.copyOf(models);
    }

    /**
     * The defaults: 16 tenants, Zipf 1.0, 1024-token system prompts, 256-token user turns,
     * 128-token answers, 30% new conversations, 8 conversations per tenant, 16384-token max prompt,
     * 10 requests/s, one model, seed 1.
     */
    public static Options defaults() {
      return new Options(16, 1.0, 1024, 256, 128, 0.3, 8, 16_384, 10, List.of(), 1);
    }

    public Options withRate(double ratePerSecond) {
      return new Options(
          tenants,
          zipfExponent,
          systemPromptTokens,
          userTokens,
          outputTokens,
          newConversationProbability,
          conversationsPerTenant,
          maxPromptTokens,
          ratePerSecond,
          models,
          seed);
    }

    public Options withSeed(long seed) {
      return new Options(
          tenants,
          zipfExponent,
          systemPromptTokens,
          userTokens,
          outputTokens,
          newConversationProbability,
          conversationsPerTenant,
          maxPromptTokens,
          ratePerSecond,
          models,
          seed);
    }

    public Options withModels(List<String> models) {
      return new Options(
          tenants,
          zipfExponent,
          systemPromptTokens,
          userTokens,
          outputTokens,
          newConversationProbability,
          conversationsPerTenant,
          maxPromptTokens,
          ratePerSecond,
          models,
          seed);
    }

    private static void positive(int value, String name) {
      if (value < 1) {
        throw new IllegalArgumentException(name + " must be >= 1, got " + value);
      }
    }
  }
}
