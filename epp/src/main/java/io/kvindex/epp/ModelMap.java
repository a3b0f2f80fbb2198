package io.kvindex.epp;

import io.kvindex.common.Check;
import java.util.Map;
import java.util.Set;

/**
 * Which index model (and LoRA adapter) a request's {@code model} names. vLLM serves a LoRA adapter
 * under the adapter's own name ({@code --lora-modules NAME=PATH}) and mixes that name into its
 * block hashes, so a request for an adapter is scored as its base model with that LoRA name.
 * Immutable, so thread-safe.
 *
 * @param models the models the router has key modes for
 * @param anyModel whether the router keys any other model too (it has default keys)
 * @param adapters LoRA adapter name → its base model
 */
record ModelMap(Set<String> models, boolean anyModel, Map<String, String> adapters) {

  /** An index model and LoRA adapter. */
  record Target(String model, String lora) {}

  ModelMap {
    models = Set.copyOf(models);
    adapters = Map.copyOf(adapters);
    adapters.forEach(
        (adapter, base) -> {
          Check.notBlank(adapter, "LoRA adapter name");
          Check.notBlank(base, "base model of " + adapter);
        });
  }

  /** The index model and LoRA of a request's model, or null when the router cannot key it. */
  Target target(String requested) {
    String base = adapters.get(requested);
    if (base != null) {
      return known(base) ? new Target(base, requested) : null;
    }
    return known(requested) ? new Target(requested, null) : null;
  }

  private boolean known(String model) {
    return anyModel || models.contains(model);
  }
}
