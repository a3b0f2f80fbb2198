package io.kvindex.service;

import io.kvindex.common.Check;
import java.util.List;
import java.util.Locale;

/**
 * One setting of a service, declared once: from its key come its flag ({@code --key}), its
 * environment variable ({@code KVINDEX_KEY}, upper case, {@code -} as {@code _}) and its key in the
 * {@code --config} file; it carries its default and its description. Immutable and thread-safe.
 *
 * @param key the setting's name, lower case with dashes ({@code lease-ttl})
 * @param flags the command-line flags, the first the main one ({@code --lease-ttl})
 * @param defaultValue the value when nothing sets it, or null when its absence means something
 * @param defaultDoc how the default reads in help and in docs/configuration.md
 * @param label the value's placeholder in help ({@code DURATION})
 * @param description what it does
 * @param envSeparator for a repeatable setting, the regex that splits its environment variable into
 *     values; null for a single-valued one
 */
public record Setting(
    String key,
    List<String> flags,
    String defaultValue,
    String defaultDoc,
    String label,
    String description,
    String envSeparator) {

  public Setting {
    Check.notBlank(key, "key");
    flags = List.copyOf(flags);
    Check.notBlank(label, "label");
    Check.notBlank(description, "description");
    Check.notBlank(defaultDoc, "defaultDoc");
  }

  /** A single-valued setting with a default, flag {@code --key}. */
  public static Setting of(String key, String defaultValue, String label, String description) {
    Check.notNull(defaultValue, "defaultValue");
    return new Setting(
        key, List.of("--" + key), defaultValue, defaultValue, label, description, null);
  }

  /** A setting whose absence means something of its own ({@code defaultDoc} says what). */
  public static Setting optional(String key, String defaultDoc, String label, String description) {
    return new Setting(key, List.of("--" + key), null, defaultDoc, label, description, null);
  }

  /** This setting under other flags (the first the main one), for example {@code --pod}. */
  public Setting flags(String... names) {
    return new Setting(
        key, List.of(names), defaultValue, defaultDoc, label, description, envSeparator);
  }

  /**
   * This setting, repeatable: each flag adds a value, the file may give a list, and the environment
   * variable holds several values split by {@code separator} (a regex).
   */
  public Setting repeatable(String separator) {
    return new Setting(
        key, flags, defaultValue, defaultDoc, label, description, Check.notBlank(separator, "sep"));
  }

  public boolean isRepeatable() {
    return envSeparator != null;
  }

  /**
   * The environment variable: {@code KVINDEX_} and the key in upper case, dashes as underscores.
   */
  public String env() {
    return env(key);
  }

  /** The environment variable of a key. */
  public static String env(String key) {
    return "KVINDEX_" + key.toUpperCase(Locale.ROOT).replace('-', '_');
  }

  /** The main flag. */
  public String flag() {
    return flags.get(0);
  }

  /** How messages name the setting: {@code lease-ttl (--lease-ttl, KVINDEX_LEASE_TTL)}. */
  public String describe() {
    return key + " (" + flag() + ", " + env() + ")";
  }
}
