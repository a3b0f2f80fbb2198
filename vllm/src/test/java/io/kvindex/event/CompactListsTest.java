package io.kvindex.event;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class CompactListsTest {
  @Test
  void blockHashes_equalToAnyListOfTheSameValues() {
    BlockHashes hashes = BlockHashes.of(1L, -1L, Long.MIN_VALUE);
    List<Long> boxed = List.of(1L, -1L, Long.MIN_VALUE);

    assertThat(hashes).isEqualTo(boxed).hasSameHashCodeAs(boxed);
    assertThat(boxed).isEqualTo(hashes);
    assertThat(hashes.getLong(1)).isEqualTo(-1L);
    assertThat(BlockHashes.copyOf(boxed)).isEqualTo(hashes);
    assertThat(BlockHashes.copyOf(hashes)).isSameAs(hashes);
    assertThat(hashes.subList(1, 3)).containsExactly(-1L, Long.MIN_VALUE);
    assertThat(BlockHashes.of()).isSameAs(BlockHashes.empty()).isEmpty();
  }

  @Test
  void blockHashes_immutable_copiesItsInput() {
    long[] input = {5, 6};
    BlockHashes hashes = BlockHashes.of(input);
    input[0] = 99;
    hashes.toLongArray()[1] = 99;

    assertThat(hashes).containsExactly(5L, 6L);
    assertThatThrownBy(() -> hashes.add(7L)).isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> hashes.set(0, 7L)).isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> BlockHashes.copyOf(Arrays.asList(1L, null)))
        .isInstanceOf(NullPointerException.class);
  }

  @Test
  void tokenIds_equalToAnyListOfTheSameValues() {
    TokenIds ids = TokenIds.of(3, 0, -7);
    List<Integer> boxed = List.of(3, 0, -7);

    assertThat(ids).isEqualTo(boxed).hasSameHashCodeAs(boxed);
    assertThat(ids.getInt(2)).isEqualTo(-7);
    assertThat(TokenIds.copyOf(boxed)).isEqualTo(ids);
    assertThat(TokenIds.copyOf(ids)).isSameAs(ids);
    assertThat(ids.subList(0, 1)).containsExactly(3);
    assertThatThrownBy(() -> ids.remove(0)).isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void blockStored_fromListsOrArrays_sameRecord() {
    BlockStored fromLists = BlockStored.of(List.of(1L, 2L), 9L, List.of(4, 5, 6, 7), 2);
    BlockStored fromArrays =
        new BlockStored(
            BlockHashes.of(1, 2),
            9L,
            TokenIds.of(4, 5, 6, 7),
            2,
            null,
            null,
            null,
            null,
            null,
            null,
            null);

    assertThat(fromLists).isEqualTo(fromArrays).hasSameHashCodeAs(fromArrays);
    assertThat(fromLists.withoutTokenIds().tokenIds()).isEmpty();
    assertThat(fromLists.withoutTokenIds().blockHashes()).isSameAs(fromLists.blockHashes());
    assertThat(new BlockRemoved(List.of(3L), null, null))
        .isEqualTo(new BlockRemoved(BlockHashes.of(3), null, null));
  }
}
