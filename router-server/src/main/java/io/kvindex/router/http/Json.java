package io.kvindex.router.http;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.POJONode;
import java.io.IOException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Reads request fields with messages that name the field. Thread-safe (stateless). */
final class Json {
  static final ObjectMapper MAPPER = new ObjectMapper();
  private static final BigInteger TWO_64 = BigInteger.ONE.shiftLeft(64);

  /** The fields that carry a prompt's token ids: nearly all of a scoring request's bytes. */
  private static final List<String> TOKEN_FIELDS = List.of("token_ids", "tokens");

  private Json() {}

  /**
   * The body as a JSON object. A token-id array ({@link #TOKEN_FIELDS}) of non-negative ints is
   * read straight into an {@code int[]}, not into a tree node per token id (a prompt of 12 000
   * tokens made the tree parse the router's largest cost in the demo's trace run); read it with
   * {@link #tokenIds} and measure it with {@link #size}. Any other body, a malformed one included,
   * is read as a tree, and its errors are reported as they always were.
   */
  static ObjectNode parseObject(byte[] body) {
    ObjectNode fast = withTokenArrays(body);
    return fast != null ? fast : parseTree(body);
  }

  /** A prompt's token ids, as {@link #parseObject} keeps them. */
  private record TokenIds(int[] ids) {}

  /**
   * The body with its token-id arrays read as {@link TokenIds}, or null when it is not an object
   * whose token-id arrays hold only non-negative ints.
   */
  private static ObjectNode withTokenArrays(byte[] body) {
    try (JsonParser p = MAPPER.getFactory().createParser(body)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        return null;
      }
      ObjectNode out = MAPPER.createObjectNode();
      JsonToken t;
      while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        if (p.nextToken() == JsonToken.START_ARRAY && TOKEN_FIELDS.contains(name)) {
          int[] ids = tokenArray(p);
          if (ids == null) {
            return null;
          }
          out.set(name, new POJONode(new TokenIds(ids)));
        } else {
          out.set(name, MAPPER.readTree(p));
        }
      }
      return t == JsonToken.END_OBJECT ? out : null;
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  /** The ints of the array the parser is at, or null if it holds anything else. */
  private static int[] tokenArray(JsonParser p) throws IOException {
    int[] out = new int[1024];
    int n = 0;
    JsonToken t;
    while ((t = p.nextToken()) == JsonToken.VALUE_NUMBER_INT) {
      int id = p.getIntValue(); // past an int's range it throws: the tree reads the body
      if (id < 0) {
        return null;
      }
      if (n == out.length) {
        out = Arrays.copyOf(out, n * 2);
      }
      out[n++] = id;
    }
    return t == JsonToken.END_ARRAY ? Arrays.copyOf(out, n) : null;
  }

  /** The elements of an array field, or -1 if it is not an array. */
  static int size(JsonNode node) {
    if (node instanceof POJONode pojo && pojo.getPojo() instanceof TokenIds tokens) {
      return tokens.ids().length;
    }
    return node != null && node.isArray() ? node.size() : -1;
  }

  private static ObjectNode parseTree(byte[] body) {
    JsonNode node;
    try {
      node = MAPPER.readTree(body);
    } catch (JsonProcessingException e) {
      throw new BadRequestException("the body is not valid JSON: " + e.getOriginalMessage());
    } catch (java.io.IOException e) {
      throw new BadRequestException("the body could not be read: " + e.getMessage());
    }
    if (node == null || !node.isObject()) {
      throw new BadRequestException("the body must be a JSON object");
    }
    return (ObjectNode) node;
  }

  /** The first present, non-null field among {@code names}, or {@code null}. */
  static JsonNode field(JsonNode body, String... names) {
    for (String name : names) {
      JsonNode value = body.get(name);
      if (value != null && !value.isNull()) {
        return value;
      }
    }
    return null;
  }

  static String text(JsonNode body, String... names) {
    JsonNode value = field(body, names);
    if (value == null) {
      return null;
    }
    if (!value.isTextual()) {
      throw new BadRequestException("'" + names[0] + "' must be a string");
    }
    return value.asText();
  }

  static String requiredText(JsonNode body, String... names) {
    String value = text(body, names);
    if (value == null || value.isBlank()) {
      throw new BadRequestException("'" + String.join("' or '", names) + "' is required");
    }
    return value;
  }

  /** A boolean field, false when absent. */
  static boolean flag(JsonNode body, String name) {
    JsonNode value = field(body, name);
    if (value == null || value.isNull()) {
      return false;
    }
    if (!value.isBoolean()) {
      throw new BadRequestException("'" + name + "' must be true or false");
    }
    return value.booleanValue();
  }

  static Integer integer(JsonNode body, String name) {
    JsonNode value = field(body, name);
    if (value == null) {
      return null;
    }
    if (!value.canConvertToInt()) {
      throw new BadRequestException("'" + name + "' must be an integer");
    }
    return value.asInt();
  }

  static int[] tokenIds(JsonNode array, String name) {
    if (array instanceof POJONode pojo && pojo.getPojo() instanceof TokenIds tokens) {
      return tokens.ids();
    }
    requireArray(array, name);
    int[] out = new int[array.size()];
    for (int i = 0; i < out.length; i++) {
      JsonNode v = array.get(i);
      if (!v.canConvertToInt() || !v.isIntegralNumber() || v.asInt() < 0) {
        throw new BadRequestException(
            "'" + name + "[" + i + "]' must be a non-negative integer token id, got " + v);
      }
      out[i] = v.asInt();
    }
    return out;
  }

  /**
   * Block keys as unsigned 64-bit values: JSON numbers in [-2^63, 2^64) (negative ones are read as
   * the two's complement, like Dynamo's i64) or decimal strings.
   */
  static long[] blockKeys(JsonNode array, String name) {
    requireArray(array, name);
    long[] out = new long[array.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = unsigned64(array.get(i), name + "[" + i + "]");
    }
    return out;
  }

  private static long unsigned64(JsonNode v, String name) {
    BigInteger value;
    if (v.isIntegralNumber()) {
      value = v.bigIntegerValue();
    } else if (v.isTextual()) {
      try {
        value = new BigInteger(v.asText().trim());
      } catch (NumberFormatException e) {
        throw new BadRequestException("'" + name + "' is not a decimal integer: " + v);
      }
    } else {
      throw new BadRequestException("'" + name + "' must be an integer block key, got " + v);
    }
    if (value.signum() < 0 ? value.bitLength() > 63 : value.compareTo(TWO_64) >= 0) {
      throw new BadRequestException("'" + name + "' does not fit in 64 bits: " + value);
    }
    return value.longValue();
  }

  static List<String> strings(JsonNode array, String name) {
    requireArray(array, name);
    List<String> out = new ArrayList<>(array.size());
    for (int i = 0; i < array.size(); i++) {
      JsonNode v = array.get(i);
      if (!v.isTextual() && !v.isIntegralNumber()) {
        throw new BadRequestException("'" + name + "[" + i + "]' must be a pod name");
      }
      out.add(v.asText());
    }
    return out;
  }

  /** A JSON object of pod name to number. */
  static Map<String, Double> loads(JsonNode object, String name) {
    if (!object.isObject()) {
      throw new BadRequestException("'" + name + "' must be an object of pod name to load");
    }
    Map<String, Double> out = new LinkedHashMap<>();
    object
        .properties()
        .forEach(
            e -> {
              if (!e.getValue().isNumber() || e.getValue().asDouble() < 0) {
                throw new BadRequestException(
                    "'" + name + "." + e.getKey() + "' must be a non-negative number");
              }
              out.put(e.getKey(), e.getValue().asDouble());
            });
    return out;
  }

  private static void requireArray(JsonNode node, String name) {
    if (!node.isArray()) {
      throw new BadRequestException("'" + name + "' must be a JSON array");
    }
  }
}
