package io.kvindex.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every relative link in the repository's Markdown (the root's pages and docs/) resolves: the file
 * or directory exists, and a {@code #fragment} into a Markdown page names one of its headings, as
 * GitHub derives heading anchors.
 */
class DocLinksTest {
  private static final Pattern LINK = Pattern.compile("\\[[^\\]]*\\]\\(([^)\\s]+)\\)");
  private static final Pattern FENCE = Pattern.compile("^\\s*```");

  private static Path repositoryRoot() {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null && !Files.isDirectory(dir.resolve("docs"))) {
      dir = dir.getParent();
    }
    assertThat(dir).as("docs/ above " + Path.of("").toAbsolutePath()).isNotNull();
    return dir;
  }

  private static List<Path> pages(Path root) throws IOException {
    List<Path> pages = new ArrayList<>();
    try (Stream<Path> top = Files.list(root)) {
      top.filter(p -> p.toString().endsWith(".md")).forEach(pages::add);
    }
    try (Stream<Path> docs = Files.walk(root.resolve("docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).forEach(pages::add);
    }
    return pages;
  }

  /** The lines of a page outside fenced code blocks. */
  private static List<String> prose(Path page) throws IOException {
    List<String> out = new ArrayList<>();
    boolean fenced = false;
    for (String line : Files.readAllLines(page)) {
      if (FENCE.matcher(line).find()) {
        fenced = !fenced;
      } else if (!fenced) {
        out.add(line);
      }
    }
    return out;
  }

  /** GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as dashes. */
  static Set<String> anchors(Path page) throws IOException {
    Set<String> anchors = new HashSet<>();
    Map<String, Integer> seen = new HashMap<>();
    for (String line : prose(page)) {
      if (line.startsWith("#")) {
        String text = line.replaceFirst("^#+\\s*", "").trim();
        String slug =
            text.toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{N} _-]", "").replace(' ', '-');
        int n = seen.merge(slug, 1, Integer::sum);
        anchors.add(n == 1 ? slug : slug + "-" + (n - 1));
      }
    }
    return anchors;
  }

  @Test
  void everyRelativeLink_resolves() throws IOException {
    Path root = repositoryRoot();
    List<Path> pages = pages(root);
    assertThat(pages).contains(root.resolve("README.md"), root.resolve("ARCHITECTURE.md"));
    List<String> broken = new ArrayList<>();
    for (Path page : pages) {
      for (String line : prose(page)) {
        Matcher m = LINK.matcher(line);
        while (m.find()) {
          String target = m.group(1);
          if (target.matches("^[a-z]+:.*")) {
            continue; // http:, https:, mailto:
          }
          int hash = target.indexOf('#');
          String file = hash >= 0 ? target.substring(0, hash) : target;
          String fragment = hash >= 0 ? target.substring(hash + 1) : null;
          Path resolved = file.isEmpty() ? page : page.getParent().resolve(file).normalize();
          String where = root.relativize(page) + ": " + target;
          if (!Files.exists(resolved)) {
            broken.add(where + " (no such file)");
          } else if (fragment != null
              && resolved.toString().endsWith(".md")
              && !anchors(resolved).contains(fragment)) {
            broken.add(where + " (no such heading)");
          }
        }
      }
    }
    assertThat(broken).as("broken links in the Markdown pages").isEmpty();
  }
}
