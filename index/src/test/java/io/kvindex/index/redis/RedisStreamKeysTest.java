package io.kvindex.index.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.KeyMode;
import io.kvindex.index.StreamId;
import io.kvindex.index.StreamWrites;
import org.junit.jupiter.api.Test;

/** A stream's keys derived once name what {@link KeySchema} derives, and only for its index. */
class RedisStreamKeysTest {
  private static final StreamId STREAM = new StreamId("m", "p", 3);

  @Test
  void of_namesWhatTheSchemaDerives() {
    KeySchema schema = new KeySchema("a", 4);
    RedisStreamKeys k = RedisStreamKeys.of(schema, STREAM, KeyMode.TOKEN);
    int g = schema.groupOf("m", "p");
    assertThat(k.group).isEqualTo(g);
    assertThat(k.meta).isEqualTo(schema.meta(g));
    assertThat(k.streams).isEqualTo(schema.streams(g));
    assertThat(k.pods).isEqualTo(schema.pods(g));
    assertThat(k.blocks).isEqualTo(schema.blocks(g));
    assertThat(k.free).isEqualTo(schema.free(g));
    assertThat(k.dead).isEqualTo(schema.dead(g));
    assertThat(k.counts).isEqualTo(schema.counts(g));
    assertThat(k.activity).isEqualTo(schema.activity(g));
    assertThat(k.lease).isEqualTo(schema.lease(STREAM));
    assertThat(k.tokenMap).isEqualTo(schema.tokenMap(STREAM));
    assertThat(k.streamField).isEqualTo(HashFields.streamField(STREAM));
    assertThat(k.podField).isEqualTo(HashFields.podField("m", "p"));
    assertThat(k.rank).isEqualTo(HashFields.rank(3));
    assertThat(k.scope).isEqualTo(HashFields.scope(KeyMode.TOKEN, "m"));
    assertThat(k.holderField).isEqualTo(HashFields.holderField(HashFields.podField("m", "p")));
    assertThat(k.stream()).isEqualTo(STREAM);
    assertThat(k.mode()).isEqualTo(KeyMode.TOKEN);
  }

  @Test
  void in_theSameIndex_keepsTheKeys() {
    KeySchema schema = new KeySchema("a", 4);
    RedisStreamKeys k = RedisStreamKeys.of(schema, STREAM, KeyMode.ENGINE);
    assertThat(RedisStreamKeys.in(schema, k)).isSameAs(k);
  }

  @Test
  void in_anotherIndex_derivesThemAgain() {
    KeySchema mine = new KeySchema("a", 4);
    KeySchema other = new KeySchema("b", 4);
    RedisStreamKeys k = RedisStreamKeys.in(mine, RedisStreamKeys.of(other, STREAM, KeyMode.ENGINE));
    assertThat(k.lease).isEqualTo(mine.lease(STREAM));
    assertThat(k.meta).isEqualTo(mine.meta(mine.groupOf("m", "p")));
  }

  @Test
  void in_keysOfAnotherImplementation_derivesThem() {
    KeySchema schema = new KeySchema("a", 4);
    StreamWrites.Keys plain =
        new StreamWrites.Keys() {
          @Override
          public StreamId stream() {
            return STREAM;
          }

          @Override
          public KeyMode mode() {
            return KeyMode.ENGINE;
          }
        };
    RedisStreamKeys k = RedisStreamKeys.in(schema, plain);
    assertThat(k.scope).isEqualTo(HashFields.scope(KeyMode.ENGINE, "m"));
    assertThat(k.tokenMap).isEqualTo(schema.tokenMap(STREAM));
  }
}
