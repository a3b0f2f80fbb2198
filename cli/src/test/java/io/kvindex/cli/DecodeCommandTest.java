package io.kvindex.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockStored;
import io.kvindex.event.ExtraKey;
import io.kvindex.event.KvEventBatch;
import io.kvindex.wire.KvEventEncoder;
import io.kvindex.wire.WireEra;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class DecodeCommandTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  @Test
  void decode_workedExampleArrayEra_printsOneJsonObjectWithUnsignedHashes() throws IOException {
    Path file = write("example.bin", fixture("worked-example-array.hex"));

    Run run = run("decode", file.toString());

    assertThat(run.exitCode).isZero();
    assertThat(run.err).isEmpty();
    JsonNode batch = JSON.readTree(run.out);
    assertThat(batch.get("ts").asDouble()).isEqualTo(1.5);
    assertThat(batch.get("data_parallel_rank").asInt()).isZero();
    assertThat(batch.get("skipped_tags")).isEmpty();
    JsonNode stored = batch.get("events").get(0);
    assertThat(stored.get("type").asText()).isEqualTo("BlockStored");
    assertThat(stored.get("block_hashes").get(0).isTextual()).isTrue();
    assertThat(stored.get("block_hashes").get(0).asText()).isEqualTo("17705339885301241772");
    assertThat(stored.get("parent_block_hash").isNull()).isTrue();
    assertThat(stored.get("token_ids")).hasSize(16);
    assertThat(stored.get("token_ids").get(11).asInt()).isEqualTo(66351);
    assertThat(stored.get("block_size").asInt()).isEqualTo(16);
    assertThat(stored.get("medium").asText()).isEqualTo("GPU");
    assertThat(stored.get("extra_keys").toString()).isEqualTo("[null]");
    assertThat(stored.get("group_idx").asInt()).isZero();
    assertThat(stored.get("kv_cache_spec_kind").asText()).isEqualTo("full_attention");
    assertThat(stored.get("kv_cache_spec_sliding_window").isNull()).isTrue();
  }

  @Test
  void decode_storeOnASharedStorageTier_printsItsLocalityOwnershipAndSession() throws IOException {
    Path file = write("storage.bin", fixture("storage-tier-map.hex"));

    Run run = run("decode", "--compact", file.toString());

    assertThat(run.exitCode).isZero();
    JsonNode stored = JSON.readTree(run.out).get("events").get(0);
    assertThat(stored.get("medium").asText()).isEqualTo("STORAGE");
    assertThat(stored.get("locality").asText()).isEqualTo("REMOTE");
    assertThat(stored.get("ownership").asText()).isEqualTo("shared-fs");
    assertThat(stored.get("session_id").asText()).isEqualTo("chat-7f3a");
  }

  @Test
  void decode_removalFromASharedStorageTier_printsItsLocality() throws IOException {
    Path file = write("removed.bin", fixture("storage-tier-removed-map.hex"));

    Run run = run("decode", "--compact", file.toString());

    assertThat(run.exitCode).isZero();
    JsonNode removed = JSON.readTree(run.out).get("events").get(0);
    assertThat(removed.get("type").asText()).isEqualTo("BlockRemoved");
    assertThat(removed.get("medium").asText()).isEqualTo("STORAGE");
    assertThat(removed.get("locality").asText()).isEqualTo("REMOTE");
  }

  @Test
  void decode_mapEraFixture_everyEventType() throws IOException {
    Path file = write("map.bin", fixture("map.hex"));

    Run run = run("decode", "--compact", file.toString());

    assertThat(run.exitCode).isZero();
    assertThat(run.out).hasLineCount(1);
    JsonNode events = JSON.readTree(run.out).get("events");
    assertThat(events.get(0).get("type").asText()).isEqualTo("BlockStored");
    assertThat(events.get(1).toString())
        .isEqualTo(
            "{\"type\":\"BlockRemoved\",\"block_hashes\":[\"17705339885301241772\"],"
                + "\"medium\":\"GPU\",\"group_idx\":0,\"locality\":null}");
    assertThat(events.get(2).toString()).isEqualTo("{\"type\":\"AllBlocksCleared\"}");
  }

  @Test
  void decode_extraKeysAndSkippedTags() throws IOException {
    byte[] digest = new byte[32];
    digest[31] = 1;
    BlockStored stored =
        new BlockStored(
            List.of(-1L),
            Long.MIN_VALUE,
            List.of(1, 2),
            2,
            7,
            "cpu",
            "Alice",
            List.of(
                List.of(
                    new ExtraKey.Text("Alice"),
                    new ExtraKey.Multimodal("img", -4),
                    new ExtraKey.Digest(digest))),
            null,
            null,
            null);
    byte[] encoded =
        KvEventEncoder.of(WireEra.V0_17)
            .encode(KvEventBatch.of(2.0, List.of(stored, AllBlocksCleared.INSTANCE), 1));
    // Append an unknown event: events array fixarray(2) -> fixarray(3), then the event before rank.
    byte[] payload = withUnknownEvent(encoded);
    Path file = write("extra.bin", payload);

    Run run = run("decode", "--compact", file.toString());

    assertThat(run.exitCode).as(run.err).isZero();
    JsonNode batch = JSON.readTree(run.out);
    JsonNode event = batch.get("events").get(0);
    assertThat(event.get("block_hashes").get(0).asText()).isEqualTo("18446744073709551615");
    assertThat(event.get("parent_block_hash").asText()).isEqualTo("9223372036854775808");
    assertThat(event.get("extra_keys").toString())
        .isEqualTo("[[\"Alice\",[\"img\",-4],{\"bin\":\"" + "00".repeat(31) + "01\"}]]");
    assertThat(batch.get("skipped_tags").toString()).isEqualTo("[\"BlockInactive\"]");
  }

  @Test
  void decode_stdin() {
    Run run = runWithStdin(fixture("v0_9_0.hex"), "decode", "-");

    assertThat(run.exitCode).isZero();
    assertThat(run.out).contains("\"data_parallel_rank\" : null");
  }

  @Test
  void decode_truncatedPayload_exit2WithOneLineNamingTheOffset() throws IOException {
    Path file = write("bad.bin", Arrays.copyOf(fixture("v0_22.hex"), 30));

    Run run = run("decode", file.toString());

    assertThat(run.exitCode).isEqualTo(2);
    assertThat(run.out).isEmpty();
    assertThat(run.err)
        .hasLineCount(1)
        .startsWith("kvindex decode: " + file + " is not a valid KVEventBatch: ")
        .contains("events[0].block_hashes[0] at byte 25: truncated");
  }

  @Test
  void decode_trailingGarbage_exit2() throws IOException {
    byte[] valid = fixture("v0_9_1.hex");
    Path file = write("trailing.bin", Arrays.copyOf(valid, valid.length + 1));

    Run run = run("decode", file.toString());

    assertThat(run.exitCode).isEqualTo(2);
    assertThat(run.err).hasLineCount(1).contains("at byte " + valid.length);
  }

  @Test
  void decode_missingFile_clearMessageExit1() {
    Path missing = dir.resolve("nope.bin");

    Run run = run("decode", missing.toString());

    assertThat(run.exitCode).isEqualTo(1);
    assertThat(run.err.strip())
        .isEqualTo("kvindex decode: cannot read " + missing + ": no such file");
  }

  @Test
  void decode_noFile_usageErrorExit2() {
    Run run = run("decode");

    assertThat(run.exitCode).isEqualTo(2);
    assertThat(run.err).hasLineCount(1).contains("FILE");
  }

  private static byte[] withUnknownEvent(byte[] encoded) {
    // [ts(9 bytes after the 0x93 header), events fixarray(2) ..., rank]; rank is the last byte.
    byte[] unknown =
        HexFormat.of().parseHex("92ad426c6f636b496e61637469766590"); // ["BlockInactive", []]
    byte[] out = new byte[encoded.length + unknown.length];
    System.arraycopy(encoded, 0, out, 0, encoded.length - 1);
    out[10] = (byte) 0x93;
    System.arraycopy(unknown, 0, out, encoded.length - 1, unknown.length);
    out[out.length - 1] = encoded[encoded.length - 1];
    return out;
  }

  private Path write(String name, byte[] bytes) throws IOException {
    return Files.write(dir.resolve(name), bytes);
  }

  /** A hand-built fixture of the common module's wire tests (hex, "#" comments). */
  private static byte[] fixture(String name) {
    try (InputStream in = DecodeCommandTest.class.getResourceAsStream("/wire/" + name)) {
      if (in == null) {
        throw new IllegalStateException("no test resource wire/" + name);
      }
      StringBuilder digits = new StringBuilder();
      for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
        int hash = line.indexOf('#');
        digits.append((hash >= 0 ? line.substring(0, hash) : line).replaceAll("\\s+", ""));
      }
      return HexFormat.of().parseHex(digits);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private record Run(int exitCode, String out, String err) {}

  private static Run run(String... args) {
    return runWithStdin(new byte[0], args);
  }

  private static Run runWithStdin(byte[] stdin, String... args) {
    CommandLine commandLine = Main.commandLine();
    DecodeCommand decode = commandLine.getSubcommands().get("decode").getCommand();
    decode.stdin = new ByteArrayInputStream(stdin);
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    commandLine.setOut(new PrintWriter(out, true));
    commandLine.setErr(new PrintWriter(err, true));
    int exitCode = commandLine.execute(args);
    return new Run(exitCode, out.toString(), err.toString());
  }
}
