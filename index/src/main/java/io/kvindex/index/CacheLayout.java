package io.kvindex.index;

import io.kvindex.common.Check;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * A model's KV-cache groups as its engines' events describe them: per {@code group_idx} the
 * attention kind, the block size and (sliding window) the window. Ingesters learn it from the
 * stores they apply and record it in the index, so routers score hybrid models (full attention
 * beside sliding-window, chunked-local or Mamba groups) without configuration. Immutable and
 * thread-safe.
 *
 * @param groups one entry per cache group, ascending by index
 */
public record CacheLayout(List<Group> groups) {

  /** How vLLM's coordinator finds a group's cache hit. */
  public enum Kind {
    /** Full attention (and MLA, sink): every block from block 0, left to right. */
    FULL,
    /** Sliding window: the blocks covering the window that ends exactly at the hit. */
    SLIDING_WINDOW,
    /** Chunked local attention: the blocks of the chunk the hit ends in. */
    CHUNKED_LOCAL,
    /** Mamba (align mode): the state checkpoint ending exactly at the hit. */
    MAMBA,
    /** A kind the hit rule does not know: the group cannot be scored. */
    OTHER;

    /** The kind of a {@code kv_cache_spec_kind}; nil (events before hybrid support) is full. */
    public static Kind of(String specKind) {
      if (specKind == null) {
        return FULL;
      }
      Kind kind = ofLowerCase(specKind); // as vLLM sends them: no copy
      return kind != OTHER ? kind : ofLowerCase(specKind.toLowerCase(Locale.ROOT));
    }

    private static Kind ofLowerCase(String specKind) {
      return switch (specKind) {
        case "full_attention", "mla_attention", "sink_full_attention" -> FULL;
        case "sliding_window", "sliding_window_mla" -> SLIDING_WINDOW;
        case "chunked_local_attention" -> CHUNKED_LOCAL;
        case "mamba" -> MAMBA;
        default -> OTHER;
      };
    }
  }

  /**
   * One cache group.
   *
   * @param index the group's {@code group_idx}, 0 to 65535
   * @param specKind the {@code kv_cache_spec_kind} as sent, or {@code null}
   * @param blockSize tokens per block of the group
   * @param window tokens of the sliding window (sliding-window groups), or of the attention chunk
   *     (chunked-local groups, whose events do not carry it), or 0 when unknown
   */
  public record Group(int index, String specKind, int blockSize, int window) {
    public Group {
      Check.between(index, 0, 0xFFFF, "index");
      Check.between(blockSize, 1, Integer.MAX_VALUE, "blockSize");
      Check.between(window, 0, Integer.MAX_VALUE, "window");
      if (specKind != null && !isWord(specKind)) {
        throw new IllegalArgumentException(
            "specKind must be letters, digits and '_', got '" + specKind + "'");
      }
    }

    private static boolean isWord(String s) {
      if (s.isEmpty()) {
        return false;
      }
      for (int i = 0; i < s.length(); i++) {
        char c = s.charAt(i);
        boolean word =
            c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!word) {
          return false;
        }
      }
      return true;
    }

    public Kind kind() {
      return Kind.of(specKind);
    }

    /** Why the hit rule cannot score this group, or empty when it can. */
    public Optional<String> unscorable() {
      return switch (kind()) {
        case OTHER -> Optional.of("group " + index + " is of kind '" + specKind + "'");
        case SLIDING_WINDOW, CHUNKED_LOCAL ->
            window > 0
                ? Optional.empty()
                : Optional.of(
                    "group "
                        + index
                        + " ("
                        + specKind
                        + ") has no "
                        + (kind() == Kind.SLIDING_WINDOW ? "window" : "attention chunk size"));
        default -> Optional.empty();
      };
    }

    String encode() {
      return index + ":" + (specKind == null ? "" : specKind) + ":" + blockSize + ":" + window;
    }
  }

  public CacheLayout {
    Check.notNull(groups, "groups");
    List<Group> sorted = new ArrayList<>(groups);
    sorted.sort(Comparator.comparingInt(Group::index));
    for (int i = 1; i < sorted.size(); i++) {
      if (sorted.get(i).index() == sorted.get(i - 1).index()) {
        throw new IllegalArgumentException("group " + sorted.get(i).index() + " given twice");
      }
    }
    groups = List.copyOf(sorted);
  }

  /** The layout of no group yet. */
  public static CacheLayout empty() {
    return new CacheLayout(List.of());
  }

  /** The group with this index, if the layout has it. */
  public Optional<Group> group(int index) {
    for (Group g : groups) {
      if (g.index() == index) {
        return Optional.of(g);
      }
    }
    return Optional.empty();
  }

  /** This layout with {@code group} in place of the group of its index (or added). */
  public CacheLayout with(Group group) {
    List<Group> next = new ArrayList<>(groups.size() + 1);
    for (Group g : groups) {
      if (g.index() != group.index()) {
        next.add(g);
      }
    }
    next.add(group);
    return new CacheLayout(next);
  }

  /**
   * Whether a lookup must apply the hybrid hit rule: the model has more than one cache group, or
   * its one group is not full attention.
   */
  public boolean hybrid() {
    return groups.size() > 1 || (groups.size() == 1 && groups.get(0).kind() != Kind.FULL);
  }

  /**
   * Why a router keying prompts in blocks of {@code hashBlockSize} tokens cannot score this layout:
   * a group of unknown kind or without its window, a block size that is not a multiple of the
   * router's, or no full-attention group to anchor the prefix. Empty when it can.
   */
  public Optional<String> unscorable(int hashBlockSize) {
    if (groups.stream().noneMatch(g -> g.kind() == Kind.FULL)) {
      return Optional.of("the model has no full-attention cache group");
    }
    for (Group g : groups) {
      Optional<String> why = g.unscorable();
      if (why.isPresent()) {
        return why;
      }
      if (g.blockSize() % hashBlockSize != 0) {
        return Optional.of(
            "group "
                + g.index()
                + " has blocks of "
                + g.blockSize()
                + " tokens, not a multiple of the router's block size "
                + hashBlockSize
                + " (set the model's key block size to the groups' greatest common divisor)");
      }
    }
    return Optional.empty();
  }

  /** The stored form: {@code index:kind:blockSize:window} per group, joined by {@code ;}. */
  public String encode() {
    StringBuilder out = new StringBuilder();
    for (Group g : groups) {
      if (out.length() > 0) {
        out.append(';');
      }
      out.append(g.encode());
    }
    return out.toString();
  }

  /**
   * The layout {@link #encode} wrote.
   *
   * @throws IllegalArgumentException naming what is wrong with {@code stored}
   */
  public static CacheLayout decode(String stored) {
    Check.notNull(stored, "stored");
    List<Group> groups = new ArrayList<>();
    if (!stored.isEmpty()) {
      for (String part : stored.split(";", -1)) {
        String[] f = part.split(":", -1);
        if (f.length != 4) {
          throw new IllegalArgumentException(
              "a stored cache layout's group must be index:kind:blockSize:window, got '"
                  + part
                  + "'");
        }
        try {
          groups.add(
              new Group(
                  Integer.parseInt(f[0]),
                  f[1].isEmpty() ? null : f[1],
                  Integer.parseInt(f[2]),
                  Integer.parseInt(f[3])));
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException(
              "a stored cache layout's group has a malformed number: '" + part + "'", e);
        }
      }
    }
    return new CacheLayout(groups);
  }
}
