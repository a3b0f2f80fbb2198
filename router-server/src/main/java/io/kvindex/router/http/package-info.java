/**
 * The HTTP scoring service ({@code kvindex router}) for gateways not on the JVM: {@code POST
 * /score}, Dynamo/Mooncake-style {@code POST /query}, {@code /metrics}, {@code /healthz}, {@code
 * /readyz}.
 */
package io.kvindex.router.http;
