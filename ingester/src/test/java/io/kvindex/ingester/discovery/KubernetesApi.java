package io.kvindex.ingester.discovery;

import io.fabric8.kubernetes.api.model.ContainerStatusBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodConditionBuilder;
import io.fabric8.kubernetes.api.model.PodStatus;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.PodResource;
import io.fabric8.kubernetes.client.server.mock.KubernetesMixedDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.ServerRequest;
import io.fabric8.mockwebserver.ServerResponse;
import io.fabric8.mockwebserver.http.Dispatcher;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import io.fabric8.mockwebserver.http.Response;
import io.fabric8.mockwebserver.http.WebSocket;
import io.fabric8.mockwebserver.http.WebSocketListener;
import io.kvindex.common.Threads;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * A Kubernetes API server for tests: fabric8's mock server in CRUD mode (a real HTTP API with list
 * and watch) on loopback, with what real API servers do to watchers on top: a watch expired with
 * 410 Gone, watches refused, the whole API unavailable. Pods are made, changed and deleted through
 * the API like a kubelet and a controller would. Thread-safe.
 */
public final class KubernetesApi implements AutoCloseable {
  public static final String NAMESPACE = "kvindex-test";
  public static final String LABEL = "kvindex.io/enabled";

  private static final String GONE =
      "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":"
          + "\"Failure\",\"reason\":\"Expired\",\"message\":\"too old resource version\","
          + "\"code\":410}}";
  private static final String UNAVAILABLE =
      "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
          + "\"reason\":\"ServiceUnavailable\",\"code\":503}";

  private final Faults faults;
  private final KubernetesMockServer server;
  private final KubernetesClient admin;
  private final List<KubernetesClient> clients = new CopyOnWriteArrayList<>();

  private KubernetesApi() {
    Map<ServerRequest, Queue<ServerResponse>> responses = new HashMap<>();
    faults = new Faults(new KubernetesMixedDispatcher(responses));
    server =
        new KubernetesMockServer(
            new Context(Serialization.jsonMapper()), new MockWebServer(), responses, faults, false);
    server.init(InetAddress.getLoopbackAddress(), 0);
    admin = server.createClient();
  }

  public static KubernetesApi start() {
    return new KubernetesApi();
  }

  /**
   * A new client of this server that retries broken watches and failed requests quickly; closed
   * with the server.
   */
  public KubernetesClient client() {
    KubernetesClient c =
        server.createClient(
            b ->
                b.editOrNewConfig()
                    .withNamespace(NAMESPACE)
                    .withWatchReconnectInterval(50)
                    .withWatchReconnectLimit(-1)
                    .withRequestRetryBackoffInterval(50)
                    .withRequestRetryBackoffLimit(1)
                    .endConfig());
    clients.add(c);
    return c;
  }

  /** Creates a pending pod labelled for kvindex, with one container named vllm. */
  public void create(String name, Map<String, String> annotations) {
    Pod pod =
        new PodBuilder()
            .withNewMetadata()
            .withName(name)
            .withNamespace(NAMESPACE)
            .withUid(UUID.randomUUID().toString())
            .addToLabels(LABEL, "true")
            .addToAnnotations(annotations)
            .endMetadata()
            .withNewSpec()
            .addNewContainer()
            .withName("vllm")
            .withImage("vllm/vllm-openai")
            .endContainer()
            .endSpec()
            .withNewStatus()
            .withPhase("Pending")
            .endStatus()
            .build();
    admin.pods().inNamespace(NAMESPACE).resource(pod).create();
  }

  /** The pod runs at {@code ip}, its vLLM container started, and is ready. */
  public void ready(String name, String ip) {
    status(
        name,
        s -> {
          s.setPhase("Running");
          s.setPodIP(ip);
          if (s.getContainerStatuses().isEmpty()) {
            s.getContainerStatuses()
                .add(
                    new ContainerStatusBuilder()
                        .withName("vllm")
                        .withReady(true)
                        .withRestartCount(0)
                        .withContainerID("containerd://" + UUID.randomUUID())
                        .build());
          }
          readiness(s, true);
        });
  }

  /** The pod's readiness probe fails (its IP and container stay). */
  public void notReady(String name) {
    status(name, s -> readiness(s, false));
  }

  /** The vLLM container restarted in place: a new container ID, one restart more. */
  public void restart(String name) {
    int restarts = pod(name).getStatus().getContainerStatuses().get(0).getRestartCount() + 1;
    String id = "containerd://" + UUID.randomUUID();
    status(
        name,
        s -> {
          var c = s.getContainerStatuses().get(0);
          c.setRestartCount(restarts);
          c.setContainerID(id);
        });
  }

  /** Sets the pod's kvindex label. */
  public void label(String name, String value) {
    edit(
        name,
        r ->
            r.edit(
                p -> {
                  p.getMetadata().getLabels().put(LABEL, value);
                  return p;
                }));
  }

  public void delete(String name) {
    admin.pods().inNamespace(NAMESPACE).withName(name).delete();
  }

  /** Ends every open watch with 410 Gone, as an API server does once its history moved on. */
  public void expireWatches() {
    faults.open.forEach(ws -> ws.send(GONE));
  }

  /**
   * Answers every watch with 503 while {@code refused} (open ones are closed first); the first
   * watch afterwards is expired with 410 Gone, as its history has moved on meanwhile.
   */
  public void refuseWatches(boolean refused) {
    faults.refuseWatches = refused;
    if (refused) {
      faults.closeAll();
    } else {
      faults.expireNext = true;
    }
  }

  /**
   * While {@code down}, answers every request with 503 and holds no watch, as an API server that is
   * restarting; expires the first watch afterwards, as its history is gone.
   */
  public void unavailable(boolean down) {
    faults.down = down;
    if (down) {
      faults.closeAll();
    } else {
      faults.expireNext = true;
    }
  }

  /** Lists of pods served so far (a watch is not a list). */
  public int lists() {
    return faults.lists.get();
  }

  /**
   * Answers the next PATCH with 503 after it took effect, as when an answer is lost on the way
   * back: the client sends it again.
   */
  public void loseNextPatchAnswer() {
    faults.loseNextPatchAnswer = true;
  }

  public Pod pod(String name) {
    return admin.pods().inNamespace(NAMESPACE).withName(name).get();
  }

  private void status(String name, Consumer<PodStatus> change) {
    edit(
        name,
        r ->
            r.editStatus(
                p -> {
                  change.accept(p.getStatus());
                  return p;
                }));
  }

  /**
   * Changes a pod as a kubelet or a controller does: read, change, write; on a conflict (the pod
   * changed in between, or a resent write that had already taken effect) read again and change
   * again. Each change sets values, so making it twice is making it once.
   */
  private void edit(String name, Consumer<PodResource> edit) {
    for (int attempt = 1; ; attempt++) {
      try {
        edit.accept(admin.pods().inNamespace(NAMESPACE).withName(name));
        return;
      } catch (KubernetesClientException e) {
        if (e.getCode() != HttpURLConnection.HTTP_CONFLICT || attempt == 5) {
          throw e;
        }
      }
    }
  }

  private static void readiness(PodStatus s, boolean ready) {
    s.getConditions().removeIf(c -> c.getType().equals("Ready"));
    s.getConditions()
        .add(
            new PodConditionBuilder()
                .withType("Ready")
                .withStatus(ready ? "True" : "False")
                .build());
    s.getContainerStatuses().forEach(c -> c.setReady(ready));
  }

  @Override
  public void close() {
    clients.forEach(KubernetesClient::close);
    admin.close();
    server.destroy();
  }

  /** The CRUD dispatcher, with faults; tracks open watches to end them. */
  private static final class Faults extends Dispatcher {
    private final KubernetesMixedDispatcher crud;
    private final Set<WebSocket> open = ConcurrentHashMap.newKeySet();
    private final AtomicInteger lists = new AtomicInteger();
    private final ThreadPoolExecutor closes =
        Threads.bounded(
            "kubernetes-api-watch-close", 1, 1024, new ThreadPoolExecutor.AbortPolicy());
    private volatile boolean refuseWatches;
    private volatile boolean down;
    private volatile boolean expireNext;
    private volatile boolean loseNextPatchAnswer;

    Faults(KubernetesMixedDispatcher crud) {
      this.crud = crud;
    }

    @Override
    public MockResponse dispatch(RecordedRequest request) {
      boolean watch = request.getPath().contains("watch=true");
      if (down || (watch && refuseWatches)) {
        return new MockResponse().setResponseCode(503).setBody(UNAVAILABLE);
      }
      if (!watch && request.getMethod().equals("GET") && request.getPath().contains("/pods?")) {
        lists.incrementAndGet();
      }
      MockResponse response = crud.dispatch(request);
      if (loseNextPatchAnswer && request.getMethod().equals("PATCH")) {
        loseNextPatchAnswer = false;
        return new MockResponse().setResponseCode(503).setBody(UNAVAILABLE);
      }
      WebSocketListener listener = response.getWebSocketListener();
      if (watch && listener != null) {
        response.withWebSocketUpgrade(new Tracked(listener));
      }
      return response;
    }

    void closeAll() {
      open.forEach(ws -> ws.close(1001, "going away"));
      open.clear();
    }

    @Override
    public void shutdown() {
      crud.shutdown();
      closes.shutdownNow();
    }

    /** A watch's listener that remembers the watch while it is open. */
    private final class Tracked extends WebSocketListener {
      private final WebSocketListener inner;

      Tracked(WebSocketListener inner) {
        this.inner = inner;
      }

      @Override
      public void onOpen(WebSocket ws, Response response) {
        open.add(ws);
        inner.onOpen(ws, response);
        if (down || refuseWatches) {
          ws.close(1001, "going away"); // let through just before the fault began
        } else if (expireNext) {
          expireNext = false;
          ws.send(GONE);
        }
      }

      @Override
      public void onMessage(WebSocket ws, String text) {
        inner.onMessage(ws, text);
      }

      // The mock's watch listener waits for its own sender thread when closed, and that sender
      // may wait for the event loop: told off the event loop, it cannot hold the server up.
      @Override
      public void onClosing(WebSocket ws, int code, String reason) {
        open.remove(ws);
        closes.execute(() -> inner.onClosing(ws, code, reason));
      }

      @Override
      public void onClosed(WebSocket ws, int code, String reason) {
        open.remove(ws);
        closes.execute(() -> inner.onClosed(ws, code, reason));
      }

      @Override
      public void onFailure(WebSocket ws, Throwable t, Response response) {
        open.remove(ws);
        inner.onFailure(ws, t, response);
      }
    }
  }
}
