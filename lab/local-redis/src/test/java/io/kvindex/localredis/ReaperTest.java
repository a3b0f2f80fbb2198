package io.kvindex.localredis;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ReaperTest {

  @Test
  void terminatedJvm_leavesNoServerNorDirectory() throws IOException, InterruptedException {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    Process child =
        new ProcessBuilder(
                java.toString(),
                "-cp",
                System.getProperty("java.class.path"),
                ReaperChild.class.getName())
            .redirectError(ProcessBuilder.Redirect.DISCARD)
            .start();
    try {
      BufferedReader out =
          new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
      String[] line = out.readLine().split(" ");
      long pid = Long.parseLong(line[0]);
      Path dir = Path.of(line[1]);
      assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive)).contains(true);

      child.destroy(); // SIGTERM: shutdown hooks run
      assertThat(child.waitFor(20, TimeUnit.SECONDS)).isTrue();

      assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive)).isNotEqualTo(Optional.of(true));
      assertThat(Files.exists(dir)).isFalse();
    } finally {
      child.destroyForcibly();
    }
  }
}
