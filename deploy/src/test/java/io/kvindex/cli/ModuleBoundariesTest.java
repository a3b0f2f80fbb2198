package io.kvindex.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * The product apart from the lab, read from the poms: no product module depends on a lab module, on
 * the test fixtures or on a library only the lab uses, except in test scope. The product's non-test
 * dependencies are product modules only, so this holds for their transitive dependencies too, and
 * so for the production image (cli's runtime classpath).
 */
class ModuleBoundariesTest {
  /** Libraries only the lab uses: benchmarks, charts, Redis binaries. */
  private static final Set<String> LAB_LIBRARIES =
      Set.of("jmh-core", "jmh-generator-annprocess", "jfreechart", "embedded-redis");

  /** Modules that are neither product nor lab: test fixtures, build checks, examples. */
  private static final Set<String> NOT_PRODUCT = Set.of("testing", "deploy", "examples/gateway");

  /** Test fixtures (source file names) that no product module's main code may hold. */
  private static final Set<String> TEST_FIXTURES = Set.of("Gate.java", "InMemoryPrefixIndex.java");

  /** Test-only members that no product module's main code may declare or call. */
  private static final List<String> TEST_ONLY_MEMBERS =
      List.of(
          "collectAllGarbage(",
          "buildInMemory(",
          "withDpRanks(",
          "withIncarnation(",
          "fromResource(");

  private static Path root;
  private static final List<String> modules = new ArrayList<>();

  @BeforeAll
  static void load() throws Exception {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null && !Files.isDirectory(dir.resolve("lab"))) {
      dir = dir.getParent();
    }
    assertThat(dir).as("the repository root above the working directory").isNotNull();
    root = dir;
    NodeList list = pom(root).getElementsByTagName("module");
    for (int i = 0; i < list.getLength(); i++) {
      modules.add(list.item(i).getTextContent().trim());
    }
  }

  private static Document pom(Path dir) throws Exception {
    return DocumentBuilderFactory.newInstance()
        .newDocumentBuilder()
        .parse(dir.resolve("pom.xml").toFile());
  }

  private static String child(Element e, String name) {
    for (Node n = e.getFirstChild(); n != null; n = n.getNextSibling()) {
      if (n instanceof Element c && c.getTagName().equals(name)) {
        return c.getTextContent().trim();
      }
    }
    return "";
  }

  private static String artifactId(String module) throws Exception {
    Element project = pom(root.resolve(module)).getDocumentElement();
    return child(project, "artifactId");
  }

  /** The dependencies (not the managed ones) of a module, as "artifactId scope". */
  private static List<Element> dependencies(String module) throws Exception {
    List<Element> out = new ArrayList<>();
    NodeList list = pom(root.resolve(module)).getElementsByTagName("dependency");
    for (int i = 0; i < list.getLength(); i++) {
      Element d = (Element) list.item(i);
      if (!((Element) d.getParentNode().getParentNode())
          .getTagName()
          .equals("dependencyManagement")) {
        out.add(d);
      }
    }
    return out;
  }

  private static boolean product(String module) {
    return !module.startsWith("lab/") && !NOT_PRODUCT.contains(module);
  }

  @Test
  void productModules_dependOnTheLabOnlyInTestScope() throws Exception {
    Set<String> lab = new TreeSet<>(LAB_LIBRARIES);
    for (String module : modules) {
      if (!product(module)) {
        lab.add(artifactId(module));
      }
    }
    assertThat(lab).contains("kvindex-simulator", "kvindex-local-redis", "kvindex-testing");
    List<String> product = modules.stream().filter(ModuleBoundariesTest::product).toList();
    assertThat(product)
        .contains("base", "vllm", "index", "shell", "ingester", "router", "inspect", "cli");
    for (String module : product) {
      for (Element d : dependencies(module)) {
        if (lab.contains(child(d, "artifactId"))) {
          assertThat(child(d, "scope"))
              .as(module + " depends on " + child(d, "artifactId"))
              .isEqualTo("test");
        }
      }
    }
  }

  @Test
  void productModules_dependOnTestFixturesOnlyInTestScope() throws Exception {
    for (String module : modules.stream().filter(ModuleBoundariesTest::product).toList()) {
      for (Element d : dependencies(module)) {
        if (child(d, "type").equals("test-jar")) {
          assertThat(child(d, "scope"))
              .as(module + " depends on the test fixtures of " + child(d, "artifactId"))
              .isEqualTo("test");
        }
      }
    }
  }

  /**
   * Test fixtures and fault hooks live in test sources, never in a product module's main code: only
   * tests and the lab supply them.
   */
  @Test
  void productMainCode_holdsNoTestFixtures() throws Exception {
    List<String> found = new ArrayList<>();
    for (String module : modules.stream().filter(ModuleBoundariesTest::product).toList()) {
      Path main = root.resolve(module).resolve("src/main/java");
      if (!Files.isDirectory(main)) {
        continue;
      }
      try (var files = Files.walk(main)) {
        for (Path f : files.filter(f -> f.toString().endsWith(".java")).toList()) {
          if (TEST_FIXTURES.contains(f.getFileName().toString())) {
            found.add(root.relativize(f).toString());
          }
          String text = Files.readString(f);
          for (String member : TEST_ONLY_MEMBERS) {
            if (text.contains(member)) {
              found.add(root.relativize(f) + ": " + member);
            }
          }
        }
      }
    }
    assertThat(found).isEmpty();
  }

  /**
   * The inspector is a tool, not part of the index library: it lives in inspect, which only the
   * cli, the lab and tests depend on; the library and the router library do not.
   */
  @Test
  void inspector_isOutsideTheIndexLibrary() throws Exception {
    assertThat(root.resolve("inspect/src/main/java/io/kvindex/inspect/RedisInspector.java"))
        .isRegularFile();
    try (var files = Files.walk(root.resolve("index/src/main/java"))) {
      assertThat(files.map(f -> f.getFileName().toString()))
          .doesNotContain("RedisInspector.java", "IndexReport.java");
    }
    for (String module : List.of("base", "vllm", "index", "router", "shell")) {
      assertThat(dependencies(module))
          .as(module + " depends on the inspector")
          .noneMatch(d -> child(d, "artifactId").equals("kvindex-inspect"));
    }
  }

  @Test
  void labModules_liveUnderLab() throws IOException {
    for (String module : modules) {
      assertThat(Files.isRegularFile(root.resolve(module).resolve("pom.xml"))).as(module).isTrue();
    }
    assertThat(modules)
        .contains(
            "lab/local-redis",
            "lab/simulator",
            "lab/demo",
            "lab/chaos",
            "lab/benchmarks",
            "lab/launcher");
  }

  /**
   * What the router library pulls in: no ZeroMQ anywhere below it, and msgpack (the wire decoder's)
   * optional in vllm, so a gateway does not get it.
   */
  @Test
  void routerLibrary_getsNeitherZeroMqNorMsgpack() throws Exception {
    for (String module : List.of("base", "vllm", "index", "router")) {
      assertThat(dependencies(module))
          .as(module + " depends on jeromq")
          .noneMatch(d -> child(d, "artifactId").equals("jeromq"));
    }
    assertThat(dependencies("vllm"))
        .filteredOn(d -> child(d, "artifactId").equals("msgpack-core"))
        .singleElement()
        .satisfies(d -> assertThat(child(d, "optional")).isEqualTo("true"));
  }

  /** The chaos harness is its own lab module; the demo holds none of it and does not need it. */
  @Test
  void chaos_livesInLabChaos() throws Exception {
    try (var files = Files.walk(root.resolve("lab/demo/src"))) {
      assertThat(files.map(f -> f.getFileName().toString()))
          .noneMatch(f -> f.startsWith("Chaos") || f.equals("HostileScoreFlood.java"));
    }
    assertThat(root.resolve("lab/chaos/src/main/java/io/kvindex/chaos/ChaosRun.java"))
        .isRegularFile();
    assertThat(root.resolve("lab/chaos/src/main/java/io/kvindex/demo"))
        .as("the harness has its own package, not the demo's")
        .doesNotExist();
    assertThat(dependencies("lab/demo"))
        .noneMatch(d -> child(d, "artifactId").equals("kvindex-chaos"));
  }
}
