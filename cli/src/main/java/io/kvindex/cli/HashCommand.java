package io.kvindex.cli;

import io.kvindex.hash.BlockHashInputs;
import io.kvindex.hash.BlockHasher;
import io.kvindex.hash.HashAlgorithm;
import io.kvindex.hash.TokenKeys;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvindex hash}: the block keys of a token sequence, one unsigned 64-bit decimal per full
 * block, exactly as vLLM reports them in KV events (or as the ingester derives token keys). Not
 * thread-safe (one instance per command line).
 */
@Command(
    name = "hash",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Print the block hash of every full block of the token ids in a file, one unsigned 64-bit"
          + " decimal per line, as vLLM reports them in KV events.",
      "The engines run with --prefix-caching-hash-algo ALGO and PYTHONHASHSEED=SEED, or without"
          + " PYTHONHASHSEED when no --seed is given."
    })
final class HashCommand implements Callable<Integer> {
  static final String TOKEN_KEYS = "token_keys";

  @Spec CommandSpec spec;

  @Option(
      names = "--algo",
      paramLabel = "ALGO",
      defaultValue = "sha256",
      completionCandidates = AlgoNames.class,
      description =
          "One of: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}). token_keys is kvindex's"
              + " own chain rooted in --model and --lora-name.")
  String algo;

  @Option(
      names = "--seed",
      paramLabel = "SEED",
      description =
          "The engines' PYTHONHASHSEED, as the string it is set to. Without it: vLLM's default"
              + " seed, for sha256 and sha256_cbor; xxhash and xxhash_cbor engines without"
              + " PYTHONHASHSEED cannot be reproduced.")
  String seed;

  @Option(
      names = "--block-size",
      paramLabel = "TOKENS",
      defaultValue = "16",
      description = "Tokens per hashed block (default: ${DEFAULT-VALUE}).")
  int blockSize;

  @Option(names = "--lora-name", paramLabel = "NAME", description = "The LoRA adapter name.")
  String loraName;

  @Option(
      names = "--cache-salt",
      paramLabel = "SALT",
      description = "The request's cache salt (enters block 0, and so every hash).")
  String cacheSalt;

  @Option(names = "--model", paramLabel = "MODEL", description = "The model (token_keys only).")
  String model;

  @Option(
      names = "--tokens",
      paramLabel = "FILE",
      required = true,
      description = "Token ids separated by commas and/or white space; - reads stdin.")
  String tokens;

  InputStream stdin = System.in;

  @Override
  public Integer call() {
    validate();
    int[] tokenIds =
        tokens.equals("-") ? TokenFile.read(stdin, "stdin") : TokenFile.read(Path.of(tokens));
    print(algo.equals(TOKEN_KEYS) ? tokenKeys(tokenIds) : engineHashes(tokenIds));
    return 0;
  }

  private void validate() {
    algo = algo.toLowerCase(Locale.ROOT);
    if (blockSize < 1) {
      throw usage("--block-size must be at least 1, got " + blockSize);
    }
    if (algo.equals(TOKEN_KEYS)) {
      rejectIfSet(seed, "--seed");
      rejectIfSet(cacheSalt, "--cache-salt");
      if (model == null) {
        throw usage("--algo token_keys needs --model");
      }
      return;
    }
    try {
      HashAlgorithm.fromVllmName(algo);
    } catch (IllegalArgumentException e) {
      throw usage("unknown --algo '" + algo + "'; expected one of " + String.join(", ", names()));
    }
    rejectIfSet(model, "--model");
    HashAlgorithm algorithm = HashAlgorithm.fromVllmName(algo);
    if (seed == null && algorithm.defaultSeed().isEmpty()) {
      throw usage(algorithm.unreproducible() + "; here: --seed SEED");
    }
  }

  private void rejectIfSet(String value, String option) {
    if (value != null) {
      throw usage(option + " does not apply to --algo " + algo);
    }
  }

  private ParameterException usage(String message) {
    return new ParameterException(spec.commandLine(), message);
  }

  private long[] engineHashes(int[] tokenIds) {
    BlockHasher hasher = BlockHasher.create(HashAlgorithm.fromVllmName(algo), seed, blockSize);
    BlockHashInputs inputs =
        BlockHashInputs.builder().loraName(loraName).cacheSalt(cacheSalt).build();
    return hasher.blockHashes(tokenIds, inputs);
  }

  private long[] tokenKeys(int[] tokenIds) {
    return TokenKeys.chain(TokenKeys.root(model, loraName), tokenIds, blockSize);
  }

  private void print(long[] hashes) {
    StringBuilder text = new StringBuilder(hashes.length * 21);
    for (long hash : hashes) {
      text.append(Long.toUnsignedString(hash)).append('\n');
    }
    PrintWriter out = spec.commandLine().getOut();
    out.print(text);
    out.flush();
  }

  static List<String> names() {
    List<String> names = new ArrayList<>();
    for (HashAlgorithm algorithm : HashAlgorithm.values()) {
      names.add(algorithm.vllmName());
    }
    names.add(TOKEN_KEYS);
    return names;
  }

  /** The accepted {@code --algo} values, for help and shell completion. */
  static final class AlgoNames implements Iterable<String> {
    @Override
    public Iterator<String> iterator() {
      return names().iterator();
    }
  }
}
