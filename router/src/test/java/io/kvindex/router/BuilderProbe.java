package io.kvindex.router;

import java.time.Duration;
import java.util.Set;

/** What a {@link KvRouterBuilder} was told, for tests of the service's settings. */
public final class BuilderProbe {
  private BuilderProbe() {}

  public static String indexName(KvRouterBuilder b) {
    return b.config().indexName();
  }

  public static Duration lookupBudget(KvRouterBuilder b) {
    return b.config().lookupBudget();
  }

  public static Set<String> models(KvRouterBuilder b) {
    return b.config().models().keySet();
  }

  public static boolean sharedLoad(KvRouterBuilder b) {
    return b.config().sharedLoad();
  }

  public static Duration sharedLoadMinAge(KvRouterBuilder b) {
    return b.config().sharedLoadMinAge();
  }

  public static String routerId(KvRouterBuilder b) {
    return b.config().routerId();
  }
}
