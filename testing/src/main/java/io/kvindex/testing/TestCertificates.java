package io.kvindex.testing;

import io.kvindex.localredis.LocalRedis;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.Key;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A throw-away certificate authority and a server certificate for {@code 127.0.0.1}, made with the
 * JDK's own {@code keytool} (no OpenSSL, no extra library) and written as PEM files for
 * redis-server and for clients. Valid for two days. Thread-safe (stateless).
 */
public final class TestCertificates {
  private static final String PASSWORD = "kvindex-test";

  private TestCertificates() {}

  /** Makes the CA and the server certificate in {@code dir}; returns the files redis needs. */
  public static LocalRedis.TlsFiles create(Path dir) {
    try {
      Path ca = dir.resolve("ca.p12");
      Path server = dir.resolve("server.p12");
      keytool(
          "-genkeypair",
          "-alias",
          "ca",
          "-keyalg",
          "RSA",
          "-keysize",
          "2048",
          "-dname",
          "CN=kvindex test CA",
          "-ext",
          "bc:c",
          "-validity",
          "2",
          "-keystore",
          ca.toString());
      keytool(
          "-genkeypair",
          "-alias",
          "server",
          "-keyalg",
          "RSA",
          "-keysize",
          "2048",
          "-dname",
          "CN=127.0.0.1",
          "-validity",
          "2",
          "-keystore",
          server.toString());
      Path request = dir.resolve("server.csr");
      keytool(
          "-certreq",
          "-alias",
          "server",
          "-keystore",
          server.toString(),
          "-file",
          request.toString());
      Path certificate = dir.resolve("server.pem");
      keytool(
          "-gencert",
          "-alias",
          "ca",
          "-keystore",
          ca.toString(),
          "-infile",
          request.toString(),
          "-outfile",
          certificate.toString(),
          "-rfc",
          "-ext",
          "san=ip:127.0.0.1",
          "-validity",
          "2");
      Path caPem = dir.resolve("ca.pem");
      keytool(
          "-exportcert",
          "-alias",
          "ca",
          "-keystore",
          ca.toString(),
          "-rfc",
          "-file",
          caPem.toString());
      Path key = dir.resolve("server.key");
      Files.writeString(key, privateKeyPem(server), StandardCharsets.US_ASCII);
      return new LocalRedis.TlsFiles(certificate, key, caPem);
    } catch (IOException | GeneralSecurityException e) {
      throw new IllegalStateException("cannot make test certificates in " + dir, e);
    }
  }

  /** The server's private key as PKCS#8 PEM, which redis-server (OpenSSL) reads. */
  private static String privateKeyPem(Path keystore) throws IOException, GeneralSecurityException {
    KeyStore store = KeyStore.getInstance("PKCS12");
    try (InputStream in = Files.newInputStream(keystore)) {
      store.load(in, PASSWORD.toCharArray());
    }
    Key key = store.getKey("server", PASSWORD.toCharArray());
    String body =
        Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
            .encodeToString(key.getEncoded());
    return "-----BEGIN PRIVATE KEY-----\n" + body + "\n-----END PRIVATE KEY-----\n";
  }

  private static void keytool(String... args) throws IOException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
    command.addAll(List.of(args));
    command.addAll(List.of("-storetype", "PKCS12", "-storepass", PASSWORD, "-noprompt"));
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    try {
      String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!process.waitFor(60, TimeUnit.SECONDS) || process.exitValue() != 0) {
        throw new IOException("keytool " + args[0] + " failed: " + output);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while running keytool", e);
    }
  }
}
