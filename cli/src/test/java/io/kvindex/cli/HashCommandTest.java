package io.kvindex.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.hash.BlockHashInputs;
import io.kvindex.hash.BlockHasher;
import io.kvindex.hash.GoldenVectors;
import io.kvindex.hash.HashAlgorithm;
import io.kvindex.hash.TokenKeys;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class HashCommandTest {
  @TempDir Path dir;
  private Path golden;

  @BeforeEach
  void writeGoldenTokens() throws IOException {
    golden = Files.writeString(dir.resolve("golden.txt"), GoldenVectors.tokensText());
  }

  private static String[] decimal(long[] hashes) {
    return Arrays.stream(hashes).mapToObj(Long::toUnsignedString).toArray(String[]::new);
  }

  @Test
  void hash_goldenTokens_printsVllmHashes() {
    CliRun run =
        CliRun.of(
            "hash",
            "--algo",
            "sha256_cbor",
            "--seed",
            "42",
            "--block-size",
            "16",
            "--tokens",
            golden.toString());
    assertThat(run.exitCode()).isZero();
    assertThat(run.err()).isEmpty();
    assertThat(run.outLines()).containsExactly(GoldenVectors.baseHashesDecimal());
  }

  @Test
  void hash_defaults_vllmDefaultsSha256NoSeedBlockSize16() {
    CliRun run = CliRun.of("hash", "--tokens", golden.toString());
    BlockHasher vllmDefaults = BlockHasher.create(HashAlgorithm.SHA256, null, 16);
    assertThat(run.exitCode()).isZero();
    assertThat(run.outLines())
        .containsExactly(decimal(vllmDefaults.blockHashes(GoldenVectors.tokens())));
  }

  @Test
  void hash_sha256NoSeed_printsTheDefaultSeedChain() throws IOException {
    // tokens 0..15: vLLM's sha256 with PYTHONHASHSEED unset (NONE_HASH of "vllm-none-hash")
    Path file =
        Files.writeString(dir.resolve("count.txt"), "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15");
    CliRun run =
        CliRun.of("hash", "--algo", "sha256", "--block-size", "16", "--tokens", file.toString());
    assertThat(run.exitCode()).isZero();
    assertThat(run.outLines()).containsExactly("3262291359910021016");
  }

  @Test
  void hash_seedGiven_isUsedAsAString() {
    CliRun run =
        CliRun.of("hash", "--algo", "sha256", "--seed", "0", "--tokens", golden.toString());
    BlockHasher seeded = BlockHasher.create(HashAlgorithm.SHA256, "0", 16);
    assertThat(run.outLines()).containsExactly(decimal(seeded.blockHashes(GoldenVectors.tokens())));
  }

  @Test
  void hash_stdin_sameAsFile() {
    CliRun run =
        CliRun.withStdin(
            GoldenVectors.tokensText(),
            "hash",
            "--algo",
            "sha256_cbor",
            "--seed",
            "42",
            "--tokens",
            "-");
    assertThat(run.exitCode()).isZero();
    assertThat(run.outLines()).containsExactly(GoldenVectors.baseHashesDecimal());
  }

  @Test
  void hash_loraAndSalt_passedToHasher() {
    CliRun run =
        CliRun.of(
            "hash",
            "--algo",
            "sha256_cbor",
            "--seed",
            "42",
            "--lora-name",
            "Alice",
            "--cache-salt",
            "s",
            "--tokens",
            golden.toString());
    BlockHasher hasher = BlockHasher.create(HashAlgorithm.SHA256_CBOR, "42", 16);
    long[] expected =
        hasher.blockHashes(
            GoldenVectors.tokens(),
            BlockHashInputs.builder().loraName("Alice").cacheSalt("s").build());
    assertThat(run.exitCode()).isZero();
    assertThat(run.outLines()).containsExactly(decimal(expected));
  }

  @ParameterizedTest
  @ValueSource(strings = {"sha256_cbor_64bit", "xxhash_cbor", "XXHASH_CBOR", "sha256", "xxhash"})
  void hash_otherAlgorithms_matchLibrary(String algo) {
    CliRun run =
        CliRun.of(
            "hash",
            "--algo",
            algo,
            "--seed",
            "7",
            "--block-size",
            "10",
            "--tokens",
            golden.toString());
    BlockHasher hasher = BlockHasher.create(HashAlgorithm.fromVllmName(algo), "7", 10);
    assertThat(run.exitCode()).isZero();
    assertThat(run.outLines())
        .hasSize(40)
        .containsExactly(decimal(hasher.blockHashes(GoldenVectors.tokens())));
  }

  @Test
  void hash_tokenKeys_chainRootedInModelAndLora() {
    CliRun run =
        CliRun.of(
            "hash",
            "--algo",
            "token_keys",
            "--model",
            "m",
            "--lora-name",
            "Alice",
            "--tokens",
            golden.toString());
    long[] expected = TokenKeys.chain(TokenKeys.root("m", "Alice"), GoldenVectors.tokens(), 16);
    assertThat(run.exitCode()).isZero();
    assertThat(run.outLines()).containsExactly(decimal(expected));
  }

  @Test
  void hash_partialTail_notPrinted() throws IOException {
    Path file = Files.writeString(dir.resolve("short.txt"), "1 2 3 4 5");
    CliRun run = CliRun.of("hash", "--seed", "0", "--block-size", "2", "--tokens", file.toString());
    assertThat(run.outLines()).hasSize(2);
  }

  @Test
  void hash_nonNumericToken_oneLineErrorExit1() throws IOException {
    Path file = Files.writeString(dir.resolve("bad.txt"), "1, 2, x3");
    CliRun run = CliRun.of("hash", "--seed", "42", "--tokens", file.toString());
    assertThat(run.exitCode()).isEqualTo(1);
    assertThat(run.out()).isEmpty();
    assertThat(run.err())
        .isEqualTo(
            "kvindex hash: "
                + file
                + " line 1: token #3 'x3' is not a token id; expected non-negative integers"
                + " separated by commas or white space\n");
  }

  @Test
  void hash_negativeToken_oneLineErrorExit1() throws IOException {
    Path file = Files.writeString(dir.resolve("neg.txt"), "1 -2");
    CliRun run = CliRun.of("hash", "--seed", "42", "--tokens", file.toString());
    assertThat(run.exitCode()).isEqualTo(1);
    assertThat(run.err()).contains("'-2' is negative").hasLineCount(1);
  }

  @Test
  void hash_missingFile_oneLineErrorExit1() {
    Path missing = dir.resolve("missing.txt");
    CliRun run = CliRun.of("hash", "--seed", "42", "--tokens", missing.toString());
    assertThat(run.exitCode()).isEqualTo(1);
    assertThat(run.err())
        .isEqualTo("kvindex hash: cannot read token file " + missing + ": no such file\n");
  }

  @Test
  void hash_directoryAsFile_oneLineErrorExit1() {
    CliRun run = CliRun.of("hash", "--seed", "42", "--tokens", dir.toString());
    assertThat(run.exitCode()).isEqualTo(1);
    assertThat(run.err()).startsWith("kvindex hash: cannot read token file ").hasLineCount(1);
  }

  @Test
  void hash_unknownAlgo_usageErrorExit2() {
    CliRun run = CliRun.of("hash", "--algo", "builtin", "--seed", "42", "--tokens", "x");
    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err())
        .isEqualTo(
            "kvindex hash: unknown --algo 'builtin'; expected one of sha256, sha256_cbor,"
                + " sha256_cbor_64bit, xxhash, xxhash_cbor, token_keys (see 'kvindex hash"
                + " --help')\n");
  }

  @ParameterizedTest
  @ValueSource(strings = {"xxhash", "xxhash_cbor"})
  void hash_xxhashWithoutSeed_saysItCannotBeReproducedExit2(String algo) {
    CliRun run = CliRun.of("hash", "--algo", algo, "--tokens", golden.toString());
    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err())
        .contains("cannot be reproduced", "PYTHONHASHSEED", "--seed", "token keys")
        .hasLineCount(1);
  }

  @Test
  void hash_missingTokens_usageErrorExit2() {
    CliRun run = CliRun.of("hash", "--seed", "42");
    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err()).contains("--tokens").hasLineCount(1);
  }

  @Test
  void hash_badBlockSize_usageErrorExit2() {
    assertThat(CliRun.of("hash", "--seed", "1", "--block-size", "0", "--tokens", "x").exitCode())
        .isEqualTo(2);
    CliRun run = CliRun.of("hash", "--seed", "1", "--block-size", "ten", "--tokens", "x");
    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err()).contains("--block-size").hasLineCount(1);
  }

  @Test
  void hash_optionsOfOtherMode_rejected() {
    assertThat(CliRun.of("hash", "--algo", "token_keys", "--tokens", "x").err())
        .contains("needs --model");
    assertThat(
            CliRun.of(
                    "hash", "--algo", "token_keys", "--model", "m", "--seed", "1", "--tokens", "x")
                .err())
        .contains("--seed does not apply");
    assertThat(CliRun.of("hash", "--seed", "1", "--model", "m", "--tokens", "x").exitCode())
        .isEqualTo(2);
  }
}
