package io.kvindex.hash;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * Expected values were computed independently in Python (hashlib.sha1, struct.pack('>I')) from the
 * definition in {@link TokenKeys}'s Javadoc.
 */
class TokenKeysTest {
  private static final int[] TOKENS = Arrays.copyOf(GoldenVectors.tokens(), 64);
  private static final String MODEL = "Qwen/Qwen3-0.6B";

  @Test
  void root_baseModel_matchesReference() {
    assertThat(TokenKeys.root(MODEL, null)).isEqualTo(-1710638643338278245L);
  }

  @Test
  void root_isFirst16HexDigitsOfSha1hex() {
    // What a Lua script gets from redis.sha1hex over the same bytes.
    assertThat(Long.toHexString(TokenKeys.root(MODEL, ""))).isEqualTo("e84297379cc40a9b");
  }

  @Test
  void root_nullLora_sameAsEmpty() {
    assertThat(TokenKeys.root(MODEL, null)).isEqualTo(TokenKeys.root(MODEL, ""));
  }

  @Test
  void root_loraOrModel_changesRoot() {
    long base = TokenKeys.root(MODEL, null);
    assertThat(TokenKeys.root(MODEL, "Alice")).isEqualTo(-3346808728072554874L);
    assertThat(TokenKeys.root("other", null)).isNotEqualTo(base);
  }

  @Test
  void root_lengthPrefix_separatesModelFromLora() {
    assertThat(TokenKeys.root("ab", "c")).isNotEqualTo(TokenKeys.root("a", "bc"));
  }

  @Test
  void chain_goldenTokens_matchesReference() {
    assertThat(TokenKeys.chain(TokenKeys.root(MODEL, null), TOKENS, 16))
        .containsExactly(
            -1140633725694870258L,
            -6546257465964942228L,
            6305769272312855666L,
            1724434508388829926L);
    assertThat(TokenKeys.chain(TokenKeys.root(MODEL, "Alice"), TOKENS, 16))
        .containsExactly(
            -201866821302530149L,
            6892783225380268877L,
            -5061444943675597136L,
            -2549188040130958456L);
  }

  @Test
  void next_overRanges_sameAsChain() {
    long root = TokenKeys.root(MODEL, null);
    long[] chain = TokenKeys.chain(root, TOKENS, 16);
    long first = TokenKeys.next(root, TOKENS, 0, 16);
    assertThat(first).isEqualTo(chain[0]);
    assertThat(TokenKeys.next(first, TOKENS, 16, 32)).isEqualTo(chain[1]);
  }

  @Test
  void chain_partialTail_ignored() {
    long root = TokenKeys.root(MODEL, null);
    assertThat(TokenKeys.chain(root, Arrays.copyOf(TOKENS, 63), 16))
        .containsExactly(Arrays.copyOf(TokenKeys.chain(root, TOKENS, 16), 3));
  }

  @Test
  void next_negativeTokenOrEmptyRange_rejected() {
    int[] tokens = {1, -2};
    assertThatThrownBy(() -> TokenKeys.next(0, tokens, 0, 2))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("tokens[1]");
    assertThatThrownBy(() -> TokenKeys.next(0, tokens, 1, 1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> TokenKeys.chain(0, tokens, 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("blockSize");
  }
}
