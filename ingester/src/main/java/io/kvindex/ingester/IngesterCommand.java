package io.kvindex.ingester;

import io.kvindex.common.KvIndexException;
import io.kvindex.service.SettingOptions;
import io.kvindex.service.SettingValues;
import java.io.IOException;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.IModelTransformer;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvindex ingester}: runs one ingester replica until interrupted. Its flags are the {@link
 * IngesterSetting}s; each setting comes from its flag, else the environment ({@code KVINDEX_*}),
 * else the {@code --config} file, else its default. Not thread-safe: one instance per command line.
 */
@Command(
    name = "ingester",
    mixinStandardHelpOptions = true,
    modelTransformer = IngesterCommand.Options.class,
    description = {
      "Runs an ingester replica: subscribes to vLLM pods' KV events and keeps the Redis index"
          + " equal to what they cache.",
      "Each flag can also be set as the environment variable KVINDEX_<FLAG> (upper case, '-' as"
          + " '_') or as a key in the --config file; a flag wins over the environment, which wins"
          + " over the file."
    })
public final class IngesterCommand implements Callable<Integer> {
  @Spec private CommandSpec spec;

  /** Adds the settings' flags to the command. */
  static final class Options implements IModelTransformer {
    @Override
    public CommandSpec transform(CommandSpec commandSpec) {
      return SettingOptions.addTo(commandSpec, IngesterSetting.all());
    }
  }

  @Override
  public Integer call() throws Exception {
    IngesterConfig config;
    try {
      config = config(System.getenv());
    } catch (IllegalArgumentException | IOException e) {
      throw new ParameterException(spec.commandLine(), e.getMessage(), e);
    }
    Ingester started;
    try {
      started = Ingester.start(config);
    } catch (KvIndexException e) {
      spec.commandLine().getErr().println("kvindex ingester: cannot start: " + e.getMessage());
      return 1;
    }
    try (Ingester ingester = started) {
      Thread hook = new Thread(ingester::close, "kvindex-ingester-shutdown");
      Runtime.getRuntime().addShutdownHook(hook);
      ingester.awaitTermination();
    }
    return 0;
  }

  /** The config this command line resolves to, given an environment. */
  IngesterConfig config(Map<String, String> env) throws IOException {
    SettingValues values = SettingOptions.values(spec, IngesterSetting.all(), env);
    IngesterConfig.Builder b = IngesterConfig.builder();
    for (IngesterSetting s : IngesterSetting.values()) {
      if (values.source(s.setting) != SettingValues.Source.DEFAULT) {
        values.apply(s.setting, v -> s.apply.accept(b, v));
      }
    }
    return b.build();
  }
}
