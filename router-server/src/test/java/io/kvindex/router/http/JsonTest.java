package io.kvindex.router.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The request body's token ids read straight into ints, and every other body as before. */
class JsonTest {
  private static ObjectNode parse(String body) {
    return Json.parseObject(body.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void parseObject_tokenIds_readAsIntsBesideTheOtherFields() {
    ObjectNode body =
        parse(
            "{\"model\":\"m\",\"token_ids\":[0,7,2147483647],\"pods\":[\"a\",\"b\"],"
                + "\"load\":{\"a\":1.5},\"cache_salt\":null,\"explain\":true}");

    JsonNode tokens = Json.field(body, "token_ids", "tokens");
    assertThat(Json.tokenIds(tokens, "token_ids")).containsExactly(0, 7, Integer.MAX_VALUE);
    assertThat(Json.size(tokens)).isEqualTo(3);
    assertThat(Json.requiredText(body, "model")).isEqualTo("m");
    assertThat(Json.strings(body.get("pods"), "pods")).containsExactly("a", "b");
    assertThat(Json.loads(body.get("load"), "load")).containsEntry("a", 1.5);
    assertThat(Json.text(body, "cache_salt")).isNull();
    assertThat(Json.flag(body, "explain")).isTrue();
  }

  @Test
  void parseObject_tokensAliasAndEmptyArray() {
    assertThat(Json.tokenIds(Json.field(parse("{\"tokens\":[3,4]}"), "token_ids", "tokens"), "t"))
        .containsExactly(3, 4);
    JsonNode empty = Json.field(parse("{\"token_ids\":[]}"), "token_ids");
    assertThat(Json.tokenIds(empty, "token_ids")).isEmpty();
    assertThat(Json.size(empty)).isZero();
  }

  @Test
  void parseObject_duplicateField_lastWins() {
    ObjectNode body = parse("{\"token_ids\":[1],\"token_ids\":[2,3]}");
    assertThat(Json.tokenIds(body.get("token_ids"), "token_ids")).containsExactly(2, 3);
  }

  /** Token ids that are not all non-negative ints take the tree and its messages. */
  @Test
  void parseObject_badTokenIds_sameMessagesAsTheTree() {
    assertThatThrownBy(() -> Json.tokenIds(parse("{\"token_ids\":[1,-1]}").get("token_ids"), "t"))
        .hasMessage("'t[1]' must be a non-negative integer token id, got -1");
    assertThatThrownBy(() -> Json.tokenIds(parse("{\"token_ids\":[1.5]}").get("token_ids"), "t"))
        .hasMessage("'t[0]' must be a non-negative integer token id, got 1.5");
    assertThatThrownBy(
            () -> Json.tokenIds(parse("{\"token_ids\":[3000000000]}").get("token_ids"), "t"))
        .hasMessage("'t[0]' must be a non-negative integer token id, got 3000000000");
    assertThatThrownBy(() -> Json.tokenIds(parse("{\"token_ids\":[\"1\"]}").get("token_ids"), "t"))
        .hasMessageStartingWith("'t[0]' must be a non-negative integer token id");
    assertThatThrownBy(() -> Json.tokenIds(parse("{\"token_ids\":\"x\"}").get("token_ids"), "t"))
        .hasMessage("'t' must be a JSON array");
    assertThat(Json.size(parse("{\"token_ids\":[1,-1]}").get("token_ids"))).isEqualTo(2);
  }

  @Test
  void parseObject_notAnObject_sameMessagesAsTheTree() {
    assertThatThrownBy(() -> parse("{\"token_ids\":[1,2"))
        .isInstanceOf(BadRequestException.class)
        .hasMessageStartingWith("the body is not valid JSON: ");
    assertThatThrownBy(() -> parse("{not json"))
        .hasMessageStartingWith("the body is not valid JSON: ");
    assertThatThrownBy(() -> parse("[1,2]")).hasMessage("the body must be a JSON object");
    assertThatThrownBy(() -> parse("")).hasMessage("the body must be a JSON object");
  }
}
