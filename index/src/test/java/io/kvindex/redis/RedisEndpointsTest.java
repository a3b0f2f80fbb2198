package io.kvindex.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisCredentials;
import io.lettuce.core.RedisURI;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class RedisEndpointsTest {

  private static final Duration TIMEOUT = Duration.ofSeconds(2);

  private static RedisCredentials credentials(RedisURI uri) {
    return uri.getCredentialsProvider().resolveCredentials().block(Duration.ofSeconds(1));
  }

  @Test
  void parse_standalone() {
    RedisEndpoints endpoints = RedisEndpoints.parse("redis://127.0.0.1:6390/2", TIMEOUT);

    assertThat(endpoints.cluster()).isFalse();
    RedisURI uri = endpoints.uris().get(0);
    assertThat(uri.getHost()).isEqualTo("127.0.0.1");
    assertThat(uri.getPort()).isEqualTo(6390);
    assertThat(uri.getDatabase()).isEqualTo(2);
    assertThat(uri.getTimeout()).isEqualTo(TIMEOUT);
    assertThat(uri.isSsl()).isFalse();
  }

  @Test
  void parse_tlsWithAcl() {
    RedisURI uri =
        RedisEndpoints.parse("rediss://kv:s3cret@redis.example:6380", TIMEOUT).uris().get(0);

    assertThat(uri.isSsl()).isTrue();
    RedisCredentials credentials = credentials(uri);
    assertThat(credentials.getUsername()).isEqualTo("kv");
    assertThat(new String(credentials.getPassword())).isEqualTo("s3cret");
  }

  @Test
  void parse_clusterScheme() {
    RedisEndpoints endpoints =
        RedisEndpoints.parse("rediss-cluster://kv:pw@h1:7000,h2:7001,h3:7002", TIMEOUT);

    assertThat(endpoints.cluster()).isTrue();
    assertThat(endpoints.uris()).hasSize(3);
    assertThat(endpoints.uris()).allSatisfy(uri -> assertThat(uri.isSsl()).isTrue());
    assertThat(endpoints.uris())
        .allSatisfy(uri -> assertThat(credentials(uri).getUsername()).isEqualTo("kv"));
    assertThat(endpoints.uris().get(2).getPort()).isEqualTo(7002);
  }

  @Test
  void parse_commaSeparatedUrisAreCluster() {
    RedisEndpoints endpoints =
        RedisEndpoints.parse("redis://127.0.0.1:7000, redis://127.0.0.1:7001", TIMEOUT);

    assertThat(endpoints.cluster()).isTrue();
    assertThat(endpoints.uris()).extracting(RedisURI::getPort).containsExactly(7000, 7001);
  }

  @Test
  void parse_badSchemeRejectedWithoutPassword() {
    assertThatThrownBy(() -> RedisEndpoints.parse("http://kv:s3cret@host:1", TIMEOUT))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("redis://")
        .hasMessageNotContaining("s3cret");
    assertThatThrownBy(() -> RedisEndpoints.parse("localhost:6379", TIMEOUT))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void masked_hidesPassword() {
    assertThat(RedisEndpoints.masked("redis://kv:s3cret@host:1"))
        .isEqualTo("redis://kv:***@host:1");
  }
}
