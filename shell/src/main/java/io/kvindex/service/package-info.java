/**
 * The shell every kvindex process runs in: its settings, each declared once ({@link
 * io.kvindex.service.Setting}) and read from a flag, else the environment, else a {@code --config}
 * file, else its default ({@link io.kvindex.service.SettingValues}, {@link
 * io.kvindex.service.SettingOptions} for picocli); one way to write durations ({@link
 * io.kvindex.service.Durations}); and the HTTP endpoint with {@code /metrics}, {@code /healthz} and
 * {@code /readyz} ({@link io.kvindex.service.HttpService}).
 */
package io.kvindex.service;
