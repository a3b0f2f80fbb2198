package io.kvindex.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.ExtraKey;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.wire.KvEventDecoder;
import io.kvindex.wire.MalformedEventException;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code kvindex decode FILE}: one raw msgpack {@code KVEventBatch} payload (the third frame of a
 * live message, any vLLM wire era) printed as one JSON object. Hashes are unsigned 64-bit decimal
 * strings; fields are named as on the wire; {@code null} stands for nil or absent. Exit 2 with one
 * line on stderr (field and byte offset) when the payload is malformed. Not thread-safe (one
 * instance per command line).
 */
@Command(
    name = "decode",
    mixinStandardHelpOptions = true,
    description = {
      "Decode one raw msgpack KVEventBatch payload (any vLLM era) and print it as one JSON object.",
      "Hashes print as unsigned 64-bit decimal strings; null means nil or not carried by that era.",
      "Exit status 2 when the payload is malformed, with the field and byte offset on stderr."
    })
final class DecodeCommand implements Callable<Integer> {
  private static final ObjectMapper JSON = new ObjectMapper();
  static final int MALFORMED = 2;

  @Spec CommandSpec spec;

  @Parameters(
      paramLabel = "FILE",
      description = "The payload bytes (for example a captured third frame); - reads stdin.")
  String file;

  @Option(names = "--compact", description = "Print the JSON on one line.")
  boolean compact;

  InputStream stdin = System.in;

  @Override
  public Integer call() {
    byte[] payload = read();
    KvEventBatch batch;
    try {
      batch = KvEventDecoder.decode(payload);
    } catch (MalformedEventException e) {
      PrintWriter err = spec.commandLine().getErr();
      err.println(
          spec.qualifiedName()
              + ": "
              + source()
              + " is not a valid KVEventBatch: "
              + e.getMessage());
      err.flush();
      return MALFORMED;
    }
    PrintWriter out = spec.commandLine().getOut();
    out.println(render(batch));
    out.flush();
    return 0;
  }

  private String source() {
    return file.equals("-") ? "stdin" : file;
  }

  private byte[] read() {
    try {
      return file.equals("-") ? stdin.readAllBytes() : Files.readAllBytes(Path.of(file));
    } catch (NoSuchFileException e) {
      throw new InputException("cannot read " + file + ": no such file", e);
    } catch (AccessDeniedException e) {
      throw new InputException("cannot read " + file + ": permission denied", e);
    } catch (IOException e) {
      throw new InputException("cannot read " + source() + ": " + e.getMessage(), e);
    }
  }

  private String render(KvEventBatch batch) {
    ObjectNode root = JSON.createObjectNode();
    root.put("ts", batch.timestamp());
    ArrayNode events = root.putArray("events");
    for (KvEvent event : batch.events()) {
      event(events.addObject(), event);
    }
    root.put("data_parallel_rank", batch.dataParallelRank());
    ArrayNode skipped = root.putArray("skipped_tags");
    batch.skippedTags().forEach(skipped::add);
    try {
      return compact
          ? JSON.writeValueAsString(root)
          : JSON.writerWithDefaultPrettyPrinter().writeValueAsString(root);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void event(ObjectNode node, KvEvent event) {
    if (event instanceof BlockStored s) {
      node.put("type", "BlockStored");
      hashes(node.putArray("block_hashes"), s.blockHashes());
      node.put("parent_block_hash", unsigned(s.parentBlockHash()));
      ArrayNode tokens = node.putArray("token_ids");
      s.tokenIds().forEach(tokens::add);
      node.put("block_size", s.blockSize());
      node.put("lora_id", s.loraId());
      node.put("medium", s.medium());
      node.put("lora_name", s.loraName());
      extraKeys(node, s.extraKeys());
      node.put("group_idx", s.groupIdx());
      node.put("kv_cache_spec_kind", s.kvCacheSpecKind());
      node.put("kv_cache_spec_sliding_window", s.kvCacheSpecSlidingWindow());
      node.put("locality", s.locality());
      node.put("ownership", s.ownership());
      node.put("session_id", s.sessionId());
    } else if (event instanceof BlockRemoved r) {
      node.put("type", "BlockRemoved");
      hashes(node.putArray("block_hashes"), r.blockHashes());
      node.put("medium", r.medium());
      node.put("group_idx", r.groupIdx());
      node.put("locality", r.locality());
    } else if (event instanceof AllBlocksCleared) {
      node.put("type", "AllBlocksCleared");
    }
  }

  private static void hashes(ArrayNode array, List<Long> hashes) {
    for (long hash : hashes) {
      array.add(Long.toUnsignedString(hash));
    }
  }

  private static String unsigned(Long hash) {
    return hash == null ? null : Long.toUnsignedString(hash);
  }

  /** Per block: null (nil) or an array of strings, [identifier, offset] pairs and {"bin": hex}. */
  private static void extraKeys(ObjectNode node, List<List<ExtraKey>> extraKeys) {
    if (extraKeys == null) {
      node.putNull("extra_keys");
      return;
    }
    ArrayNode perBlock = node.putArray("extra_keys");
    for (List<ExtraKey> keys : extraKeys) {
      if (keys.isEmpty()) {
        perBlock.addNull();
        continue;
      }
      ArrayNode array = perBlock.addArray();
      for (ExtraKey key : keys) {
        if (key instanceof ExtraKey.Text text) {
          array.add(text.value());
        } else if (key instanceof ExtraKey.Multimodal mm) {
          array.addArray().add(mm.identifier()).add(mm.offset());
        } else if (key instanceof ExtraKey.Digest digest) {
          array.addObject().put("bin", HexFormat.of().formatHex(digest.bytes()));
        }
      }
    }
  }
}
