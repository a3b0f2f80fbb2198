package io.kvindex.epp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What the picker reads from requests, responses and engines' metrics, in the forms vLLM uses. */
class ReadersTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void parse_completionOfTokenIds_keepsThemAndTheSalt() throws Exception {
    InferenceCall c =
        InferenceCall.parse(
            InferenceCall.Api.COMPLETIONS,
            bytes(
                "{\"model\":\"m\",\"prompt\":[5,6,7],\"cache_salt\":\"s\",\"stream\":true,"
                    + "\"stream_options\":{\"include_usage\":true}}"),
            JSON);

    assertThat(c.tokenIds()).containsExactly(5, 6, 7);
    assertThat(c.tokenize()).isNull();
    assertThat(c.cacheSalt()).isEqualTo("s");
    assertThat(c.stream()).isTrue();
    assertThat(c.streamUsage()).isTrue();
    assertThat(c.prompts()).isEqualTo(1);
  }

  @Test
  void parse_batches_scoreTheFirstPromptAndCountThem() throws Exception {
    InferenceCall ids =
        InferenceCall.parse(
            InferenceCall.Api.COMPLETIONS, bytes("{\"model\":\"m\",\"prompt\":[[1,2],[3]]}"), JSON);
    InferenceCall texts =
        InferenceCall.parse(
            InferenceCall.Api.COMPLETIONS,
            bytes("{\"model\":\"m\",\"prompt\":[\"a b\",\"c\"],\"add_special_tokens\":false}"),
            JSON);

    assertThat(ids.tokenIds()).containsExactly(1, 2);
    assertThat(ids.prompts()).isEqualTo(2);
    assertThat(texts.tokenize().toString())
        .isEqualTo("{\"model\":\"m\",\"prompt\":\"a b\",\"add_special_tokens\":false}");
    assertThat(texts.prompts()).isEqualTo(2);
  }

  @Test
  void parse_chat_asksTokenizeWithTheTemplateArguments() throws Exception {
    InferenceCall c =
        InferenceCall.parse(
            InferenceCall.Api.CHAT,
            bytes(
                "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                    + "\"chat_template_kwargs\":{\"enable_thinking\":false},\"temperature\":0}"),
            JSON);

    assertThat(c.tokenize().toString())
        .isEqualTo(
            "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                + "\"chat_template_kwargs\":{\"enable_thinking\":false}}");
  }

  @Test
  void parse_unreadableBodies_sayWhy() {
    assertThatThrownBy(() -> InferenceCall.parse(InferenceCall.Api.COMPLETIONS, bytes("[1]"), JSON))
        .isInstanceOfSatisfying(
            InferenceCall.Unreadable.class, e -> assertThat(e.reason).isEqualTo("unparseable"));
    assertThatThrownBy(
            () ->
                InferenceCall.parse(InferenceCall.Api.COMPLETIONS, bytes("{\"prompt\":[1]}"), JSON))
        .isInstanceOfSatisfying(
            InferenceCall.Unreadable.class, e -> assertThat(e.reason).isEqualTo("no_model"));
    assertThatThrownBy(
            () ->
                InferenceCall.parse(
                    InferenceCall.Api.COMPLETIONS,
                    bytes("{\"model\":\"m\",\"prompt\":[1,-2]}"),
                    JSON))
        .isInstanceOfSatisfying(
            InferenceCall.Unreadable.class, e -> assertThat(e.reason).isEqualTo("no_prompt"));
  }

  @Test
  void parse_readsTheTokenIdsInOnePass_skippingWhatItDoesNotRead() throws Exception {
    int[] ids = new int[5000];
    StringBuilder prompt = new StringBuilder();
    for (int i = 0; i < ids.length; i++) {
      ids[i] = i * 7 % 50_000;
      prompt.append(i == 0 ? "" : " , ").append(ids[i]);
    }
    InferenceCall c =
        InferenceCall.parse(
            InferenceCall.Api.COMPLETIONS,
            bytes(
                "{\"logit_bias\":{\"prompt\":[1]},\"prompt\":[9],\"model\":\"m\","
                    + "\"n\":[[\"x\"],{\"y\":null}],\"prompt\":[ "
                    + prompt
                    + " ],\"max_tokens\":1}"),
            JSON);

    assertThat(c.tokenIds()).containsExactly(ids);
    assertThat(c.prompts()).isEqualTo(1);
  }

  @Test
  void parse_tokenIdsReadFromTheBytes_readTheFieldsAroundThemAsTheParserDoes() throws Exception {
    for (String body :
        List.of(
            "{\"model\":\"m\",\"prompt\":[0,7,2147483647]}",
            "{\"prompt\":[0,7,2147483647],\"model\":\"m\",\"cache_salt\":\"s\"}",
            "{ \"prompt\" : [\n 0 ,\t7\r\n,2147483647 ] , \"model\" : \"m\" , \"n\":{\"a\":[1]} }",
            "{\"prompt\":[5],\"model\":\"x\",\"prompt\":[0,7,2147483647],\"model\":\"m\"}")) {
      InferenceCall c = InferenceCall.parse(InferenceCall.Api.COMPLETIONS, bytes(body), JSON);

      assertThat(c.tokenIds()).as(body).containsExactly(0, 7, 2147483647);
      assertThat(c.model()).as(body).isEqualTo("m");
    }
    assertThat(
            InferenceCall.parse(
                    InferenceCall.Api.COMPLETIONS,
                    bytes("{\"prompt\":[1],\"cache_salt\":\"s\",\"model\":\"m\"}"),
                    JSON)
                .cacheSalt())
        .isEqualTo("s");
    for (String notJson :
        List.of(
            "{\"model\":\"m\",\"prompt\":[1,2],}",
            "{\"model\":\"m\",\"prompt\":[1,2]",
            "{\"model\":\"m\",\"prompt\":[1,2] \"n\":1}",
            "{\"model\":\"m\",\"prompt\":[1,2],\"n\":}",
            "{\"model\":\"m\",\"prompt\":[01,2]}",
            "{\"model\":\"m\",\"prompt\":[1 2]}")) {
      assertThatThrownBy(
              () -> InferenceCall.parse(InferenceCall.Api.COMPLETIONS, bytes(notJson), JSON))
          .as(notJson)
          .isInstanceOfSatisfying(
              InferenceCall.Unreadable.class, e -> assertThat(e.reason).isEqualTo("unparseable"));
    }
    assertThatThrownBy(
            () ->
                InferenceCall.parse(
                    InferenceCall.Api.COMPLETIONS,
                    bytes("{\"model\":\"m\",\"prompt\":[1,2147483648]}"),
                    JSON))
        .isInstanceOfSatisfying(
            InferenceCall.Unreadable.class, e -> assertThat(e.reason).isEqualTo("no_prompt"));
  }

  @Test
  void parse_promptsThatAreNotTokenIds_areNoPrompt_afterTheModelAndTheSyntax() {
    for (String prompt :
        List.of(
            "[]",
            "[1,2.5]",
            "[1,4294967296]",
            "[1,\"a\"]",
            "[[]]",
            "[[1,-1],[2]]",
            "[{\"a\":1},2]",
            "{\"a\":1}",
            "null",
            "7")) {
      assertThatThrownBy(
              () ->
                  InferenceCall.parse(
                      InferenceCall.Api.COMPLETIONS,
                      bytes("{\"model\":\"m\",\"prompt\":" + prompt + ",\"n\":1}"),
                      JSON))
          .as(prompt)
          .isInstanceOfSatisfying(
              InferenceCall.Unreadable.class, e -> assertThat(e.reason).isEqualTo("no_prompt"));
    }
    assertThatThrownBy(
            () ->
                InferenceCall.parse(
                    InferenceCall.Api.COMPLETIONS, bytes("{\"prompt\":[1,-1]}"), JSON))
        .isInstanceOfSatisfying(
            InferenceCall.Unreadable.class, e -> assertThat(e.reason).isEqualTo("no_model"));
    assertThatThrownBy(
            () ->
                InferenceCall.parse(
                    InferenceCall.Api.COMPLETIONS,
                    bytes("{\"model\":\"m\",\"prompt\":[1,-1],"),
                    JSON))
        .isInstanceOfSatisfying(
            InferenceCall.Unreadable.class, e -> assertThat(e.reason).isEqualTo("unparseable"));
  }

  @Test
  void usage_ofAStream_isTheLastChunksEvenSplitAcrossBodyChunks() {
    String events =
        "data: {\"choices\":[{\"text\":\"x\"}],\"usage\":null}\n\n"
            + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":2,"
            + "\"prompt_tokens_details\":{\"cached_tokens\":32}}}\n\ndata: [DONE]\n\n";
    UsageReader reader = new UsageReader(true, 1 << 16, JSON);
    byte[] all = bytes(events);
    for (byte[] piece : Proxy.split(all, 7)) {
      reader.feed(piece);
    }

    assertThat(reader.finish()).isEqualTo(new UsageReader.Usage(40, 32));
  }

  @Test
  void usage_withoutDetails_hasNoCachedTokens_andABodyWithoutUsageHasNone() {
    UsageReader plain = new UsageReader(false, 1 << 16, JSON);
    plain.feed(bytes("{\"usage\":{\"prompt_tokens\":9,\"prompt_tokens_details\":null}}"));
    assertThat(plain.finish()).isEqualTo(new UsageReader.Usage(9, -1));

    UsageReader none = new UsageReader(false, 1 << 16, JSON);
    none.feed(bytes("{\"error\":\"overloaded\"}"));
    assertThat(none.finish()).isNull();

    UsageReader tooLong = new UsageReader(false, 8, JSON);
    tooLong.feed(bytes("{\"usage\":{\"prompt_tokens\":9}}"));
    assertThat(tooLong.finish()).isNull();
    assertThat(tooLong.overflowed()).isTrue();
  }

  @Test
  void engineStats_readVllmsGaugesSummedOverEngines() {
    String text =
        "# HELP vllm:num_requests_waiting Number of requests waiting.\n"
            + "# TYPE vllm:num_requests_waiting gauge\n"
            + "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 3.0\n"
            + "vllm:num_requests_waiting{engine=\"1\",model_name=\"m\"} 1.0\n"
            + "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 7.0\n"
            + "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.25\n"
            + "vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"m\"} 0.5\n"
            + "vllm:num_requests_waiting_by_reason{reason=\"x\"} 99\n";

    EngineStats s = EngineStats.parse(text, 5);

    assertThat(s.waiting()).isEqualTo(4.0);
    assertThat(s.running()).isEqualTo(7.0);
    assertThat(s.kvCacheUsage()).isEqualTo(0.5);
    assertThat(EngineStats.parse("vllm:gpu_cache_usage_perc 0.9\n", 0).kvCacheUsage())
        .as("vLLM before 0.10 names it gpu_cache_usage_perc")
        .isEqualTo(0.9);
  }

  @Test
  void engineStats_readTheSimulatedEnginesPage() {
    try (io.kvindex.simulator.SimulatedPod pod =
        io.kvindex.simulator.SimulatedPod.start(
            io.kvindex.simulator.PodConfig.builder()
                .name("pod-0")
                .model("m")
                .blockSize(16)
                .dataParallelSize(2)
                .build())) {
      EngineStats s =
          EngineStats.parse(io.kvindex.simulator.http.PodHttpServer.metrics(pod, 3, 2), 0);
      assertThat(s.waiting()).isEqualTo(3.0);
      assertThat(s.running()).isEqualTo(2.0);
    }
  }

  @Test
  void endpoint_addressBracketsIpv6() {
    assertThat(Endpoint.of("p", "fd00::1", 8000).address()).isEqualTo("[fd00::1]:8000");
    assertThat(Endpoint.of("p", "10.0.0.1", 8000).address()).isEqualTo("10.0.0.1:8000");
  }
}
