package io.kvindex.demo;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RouterClientTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void body_withLoad_isTheScoreRequestAsJson() throws Exception {
    byte[] body =
        RouterClient.body(
            new int[] {0, 7, 151_935}, List.of("pod-0", "pod-1"), Map.of("pod-1", 3), null);

    assertThat(JSON.readTree(body))
        .isEqualTo(
            JSON.readTree(
                "{\"model\":\"sim-model\",\"token_ids\":[0,7,151935],"
                    + "\"pods\":[\"pod-0\",\"pod-1\"],\"load\":{\"pod-0\":0,\"pod-1\":3}}"));
  }

  @Test
  void body_withoutLoad_hasNoLoadField() throws Exception {
    byte[] body = RouterClient.body(new int[0], List.of("pod-0"), null, null);

    assertThat(JSON.readTree(body))
        .isEqualTo(
            JSON.readTree("{\"model\":\"sim-model\",\"token_ids\":[],\"pods\":[\"pod-0\"]}"));
  }
}
