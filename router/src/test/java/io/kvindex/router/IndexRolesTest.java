package io.kvindex.router;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.Leases;
import io.kvindex.index.Maintenance;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamWrites;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The router library reads the index and never writes a stream, takes a lease or maintains the
 * index: no class of it calls a method of {@link StreamWrites}, {@link Leases} or {@link
 * Maintenance}, whether through those types or through {@link PrefixIndex}. Read from the compiled
 * classes' constant pools, where every method a class calls is named with the type it calls it on.
 */
class IndexRolesTest {
  private static final List<Class<?>> WRITE_ROLES =
      List.of(StreamWrites.class, Leases.class, Maintenance.class);

  @Test
  void routerLibrary_callsNoWriteRole() throws Exception {
    Set<String> writeMethods = new HashSet<>();
    Set<String> writeTypes = new HashSet<>();
    for (Class<?> role : WRITE_ROLES) {
      writeTypes.add(internalName(role));
      Arrays.stream(role.getDeclaredMethods()).map(Method::getName).forEach(writeMethods::add);
    }
    assertThat(writeMethods).contains("applyAsync", "acquireLease", "collectGarbage");
    Path classes =
        Path.of(KvRouter.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    List<String> found = new ArrayList<>();
    int read = 0;
    try (Stream<Path> files = Files.walk(classes)) {
      for (Path f : files.filter(p -> p.toString().endsWith(".class")).toList()) {
        read++;
        for (String[] ref : methodRefs(f)) {
          boolean viaRole = writeTypes.contains(ref[0]);
          boolean viaWhole =
              ref[0].equals(internalName(PrefixIndex.class)) && writeMethods.contains(ref[1]);
          if (viaRole || viaWhole) {
            found.add(classes.relativize(f) + " calls " + ref[0] + "." + ref[1]);
          }
        }
      }
    }
    assertThat(read).as("router classes read from " + classes).isGreaterThan(10);
    assertThat(found).isEmpty();
  }

  private static String internalName(Class<?> c) {
    return c.getName().replace('.', '/');
  }

  /**
   * The (owner, name) of every method or interface method reference in a class file's constant pool
   * (JVMS 4.4).
   */
  static List<String[]> methodRefs(Path classFile) throws IOException {
    try (InputStream in = Files.newInputStream(classFile);
        DataInputStream d = new DataInputStream(in)) {
      d.readInt(); // magic
      d.readUnsignedShort(); // minor
      d.readUnsignedShort(); // major
      int count = d.readUnsignedShort();
      String[] utf8 = new String[count];
      int[] classNames = new int[count];
      int[][] refs = new int[count][];
      int[][] nameAndTypes = new int[count][];
      for (int i = 1; i < count; i++) {
        int tag = d.readUnsignedByte();
        switch (tag) {
          case 1 -> utf8[i] = d.readUTF();
          case 7, 8, 16, 19, 20 -> classNames[i] = d.readUnsignedShort();
          case 3, 4 -> d.readInt();
          case 5, 6 -> {
            d.readLong();
            i++;
          }
          case 9, 17, 18 -> {
            d.readUnsignedShort();
            d.readUnsignedShort();
          }
          case 10, 11 -> refs[i] = new int[] {d.readUnsignedShort(), d.readUnsignedShort()};
          case 12 -> nameAndTypes[i] = new int[] {d.readUnsignedShort(), d.readUnsignedShort()};
          case 15 -> {
            d.readUnsignedByte();
            d.readUnsignedShort();
          }
          default -> throw new IOException(classFile + ": constant pool tag " + tag);
        }
      }
      List<String[]> out = new ArrayList<>();
      for (int[] ref : refs) {
        if (ref != null) {
          out.add(new String[] {utf8[classNames[ref[0]]], utf8[nameAndTypes[ref[1]][0]]});
        }
      }
      return out;
    }
  }
}
