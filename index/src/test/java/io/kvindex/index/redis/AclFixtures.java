package io.kvindex.index.redis;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.StatusOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import java.util.Arrays;
import java.util.List;

/** The Redis users the operations page documents, set up on a test's own Redis. */
public final class AclFixtures {
  private AclFixtures() {}

  /**
   * Runs {@code ACL SETUSER} lines on one node, as its default user, then clears its ACL log.
   *
   * @param opened where the client goes, for the test to close it
   */
  public static void createUsers(RedisURI node, List<String> lines, List<AutoCloseable> opened) {
    RedisClient client = RedisClient.create(node);
    opened.add(client::shutdown);
    try (StatefulRedisConnection<String, String> admin = client.connect()) {
      for (String line : lines) {
        List<String> words = Arrays.asList(line.trim().split("\\s+"));
        CommandArgs<String, String> args =
            new CommandArgs<>(StringCodec.UTF8).addValues(words.subList(1, words.size()));
        admin.sync().dispatch(CommandType.ACL, new StatusOutput<>(StringCodec.UTF8), args);
      }
      admin.sync().aclLogReset();
    }
  }

  /**
   * {@code uri} with one of the documented users and its documented password ({@code
   * kvindex-router} → {@code router-password}).
   */
  public static String withUser(String uri, String user) {
    int scheme = uri.indexOf("://") + 3;
    return uri.substring(0, scheme)
        + user
        + ":"
        + user.substring(8)
        + "-password@"
        + uri.substring(scheme);
  }
}
