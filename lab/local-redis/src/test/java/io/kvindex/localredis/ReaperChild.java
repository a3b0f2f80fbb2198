package io.kvindex.localredis;

/** A JVM that starts a server, reports its pid and directory, then waits to be terminated. */
final class ReaperChild {
  private ReaperChild() {}

  public static void main(String[] args) throws InterruptedException {
    LocalRedis redis = LocalRedis.start();
    System.out.println(redis.pid() + " " + redis.logFile().getParent());
    System.out.flush();
    Thread.sleep(Long.MAX_VALUE);
  }
}
