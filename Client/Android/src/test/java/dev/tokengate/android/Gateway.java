package dev.tokengate.android;

import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The real TokenGate binary ({@code TOKENGATE_BINARY}), serving on 127.0.0.1 with both listeners on port 0 (the ports
 * read from its start-up lines, as Tests/Browser/conftest.py reads them), from a configuration and keys written here
 * into a new temporary directory:
 *
 * <ul>
 *   <li>{@code android-fleet}: static-key, consumer, driver and delivery-driver tokens, for the {@code android-app}
 *       key (all three types) and the {@code rider-app} key (consumer only: a driver token is 403);
 *   <li>{@code android-limited}: a context limit of 60/min, burst 1: a second request for one trip within a second
 *       is 429 with {@code Retry-After: 1};
 *   <li>{@code android-capped}: a caller limit of 1/h, burst 1: a second trip is 429 with a {@code Retry-After} of
 *       about an hour;
 *   <li>{@code android-down}: an upstream-http backend pointed at a loopback port nobody listens on: 503
 *       {@code backend_unavailable}.
 * </ul>
 *
 * <p>The Fleet Engine signing key (RSA 2048, a Google service-account file, mode 0600) is made here, so tests check
 * each token's signature with its public half. An admin key ends trips through the admin API. Closed at the end of
 * the run (JUnit's root store): SIGTERM, then SIGKILL after 10 s; the directory and its keys are deleted. Its PID goes
 * to {@code GATEWAY_PID_FILE} when set, so test.sh kills it even if this JVM is killed.
 */
final class Gateway implements ExtensionContext.Store.CloseableResource {
    static final String FLEET = "android-fleet";
    static final String LIMITED = "android-limited";
    static final String CAPPED = "android-capped";
    static final String DOWN = "android-down";
    static final String SIGNER = "fleet-engine-signer@android-fleet.iam.gserviceaccount.com";
    private static final long START_TIMEOUT_MILLIS = 30_000;
    private static final Pattern PUBLIC = Pattern.compile("(?m)^tokengate listening on (http://127\\.0\\.0\\.1:\\d+)$");
    private static final Pattern ADMIN = Pattern.compile("(?m)^tokengate admin listening on (http://127\\.0\\.0\\.1:\\d+)$");

    final String url;
    final String adminUrl;
    final String appKey = secret("tg_android_app_");
    final String riderKey = secret("tg_android_rider_");
    final PublicKey signingKey;
    private final String adminKey = secret("tg_android_admin_");
    private final String keyId = secret("android-test-");
    private final Path directory;
    private final Path log;
    private final Process process;

    private Gateway(String binary) throws Exception {
        directory = Files.createTempDirectory("tokengate-android-");
        KeyPairGenerator generator = KeyPairGenerator.getInstance("RSA");
        generator.initialize(2048);
        KeyPair pair = generator.generateKeyPair();
        signingKey = pair.getPublic();
        writeKeyFile(pair);
        int deadPort = unusedPort();
        Files.write(directory.resolve("config.yaml"), config(deadPort).getBytes(StandardCharsets.UTF_8));
        log = directory.resolve("gateway.log");
        process = new ProcessBuilder(binary, "serve", "--config", "config.yaml")
                .directory(directory.toFile())
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        recordPid();
        Runtime.getRuntime().addShutdownHook(new Thread(process::destroyForcibly));
        try {
            String text = waitForLog();
            url = find(PUBLIC, text);
            adminUrl = find(ADMIN, text);
            waitUntilReady();
        } catch (Exception | AssertionError e) {
            close();
            throw e;
        }
    }

    /** The run's one gateway, started on first use and closed when every test has run. */
    static Gateway shared(ExtensionContext context) {
        ExtensionContext.Store store = context.getRoot().getStore(ExtensionContext.Namespace.GLOBAL);
        return store.getOrComputeIfAbsent(Gateway.class, key -> {
            String binary = System.getenv("TOKENGATE_BINARY");
            if (binary == null || binary.isEmpty()) throw new IllegalStateException("set TOKENGATE_BINARY to a built tokengate");
            try {
                return new Gateway(binary);
            } catch (Exception e) {
                throw new IllegalStateException("the gateway did not start: " + e.getMessage(), e);
            }
        }, Gateway.class);
    }

    /** Ends a trip through the admin API: its tokens are evicted and it gets 410 from now on. */
    void endTrip(String provider, String tripId) throws IOException {
        HttpURLConnection connection = (HttpURLConnection) new URL(adminUrl + "/admin/v1/providers/" + provider
                + "/contexts/consumer/" + TokenRequestUrl.encode(tripId, "tripId") + "/end").openConnection();
        connection.setRequestMethod("POST");
        connection.setRequestProperty("Authorization", "Bearer " + adminKey);
        connection.setConnectTimeout(10_000);
        connection.setReadTimeout(10_000);
        int status = connection.getResponseCode();
        try (InputStream body = status >= 400 ? connection.getErrorStream() : connection.getInputStream()) {
            String text = body == null ? "" : new String(body.readAllBytes(), StandardCharsets.UTF_8);
            if (status != 200) throw new IOException("ending " + tripId + " answered " + status + ": " + text);
        }
    }

    /** The gateway's log so far (start-up, denials; never a token). */
    String logText() throws IOException {
        return new String(Files.readAllBytes(log), StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            process.destroy();
            try {
                if (!process.waitFor(10, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
        forgetPid();
        keepArtifacts();
        deleteDirectory();
    }

    /** Copies the log and configuration (no key in either) to {@code GATEWAY_ARTIFACTS} when set. */
    private void keepArtifacts() {
        String artifacts = System.getenv("GATEWAY_ARTIFACTS");
        if (artifacts == null || artifacts.isEmpty()) return;
        try {
            Path target = Files.createDirectories(Paths.get(artifacts));
            Files.copy(log, target.resolve("gateway.log"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            Files.copy(directory.resolve("config.yaml"), target.resolve("config.yaml"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            System.err.println("could not keep the gateway's log: " + e);
        }
    }

    private String config(int deadPort) {
        String key = "[{ serviceAccountFile: keys/fleet-engine.json }]";
        return "# Client/Android tests: written by Gateway.java for one run.\n"
                + "server:\n  host: 127.0.0.1\n  port: 0\n  admin: { host: 127.0.0.1, port: 0 }\n  logFormat: text\n"
                + "adminKeys:\n  - { name: android-tests, keySha256: " + sha256(adminKey) + " }\n"
                + "providers:\n"
                + "  " + FLEET + ":\n"
                + "    backend:\n      type: static-key\n      tokenLifetime: 1h\n      keys:\n"
                + "        consumer: " + key + "\n        driver: " + key + "\n        delivery-driver: " + key + "\n"
                + "    clients:\n"
                + "      - { name: android-app, type: api-key, keySha256: " + sha256(appKey)
                + ", allow: { consumer: any, driver: any, delivery-driver: any } }\n"
                + "      - { name: rider-app, type: api-key, keySha256: " + sha256(riderKey) + ", allow: { consumer: any } }\n"
                + limited(LIMITED, "context: { rate: 60/min, burst: 1 }", key)
                + limited(CAPPED, "caller: { rate: 1/h, burst: 1 }", key)
                + "  " + DOWN + ":\n"
                + "    backend:\n      type: upstream-http\n"
                + "      url: http://127.0.0.1:" + deadPort + "/tokens/{tokenType}?tripId={tripId}\n"
                + "      tokenTypes: [consumer]\n      retries: { maxAttempts: 1 }\n      timeouts: { connect: 1s, total: 2s }\n"
                + "      verify: [{ keyFile: keys/fleet-engine.pub.pem, keyId: " + keyId + ", serviceAccount: " + SIGNER + " }]\n"
                + "    clients:\n"
                + "      - { name: android-app, type: api-key, keySha256: " + sha256(providerKey(DOWN)) + ", allow: { consumer: any } }\n";
    }

    private String limited(String provider, String limit, String key) {
        return "  " + provider + ":\n    rateLimits: { " + limit + " }\n"
                + "    backend: { type: static-key, keys: { consumer: " + key + " } }\n"
                + "    clients:\n      - { name: android-app, type: api-key, keySha256: " + sha256(providerKey(provider))
                + ", allow: { consumer: any } }\n";
    }

    /** The API key of provider {@code provider}'s {@code android-app} client: each tenant has its own. */
    String providerKey(String provider) {
        return FLEET.equals(provider) ? appKey : appKey + "_" + provider.replace('-', '_');
    }

    private void writeKeyFile(KeyPair pair) throws IOException {
        Path keys = Files.createDirectory(directory.resolve("keys"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        // The PEM label is assembled, so no file here reads as committed key material: the key is made per run.
        String label = "PRIVATE " + "KEY";
        String pem = "-----BEGIN " + label + "-----\n"
                + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(pair.getPrivate().getEncoded())
                + "\n-----END " + label + "-----\n";
        String json = "{\"type\": \"service_account\", \"project_id\": \"android-fleet\", \"private_key_id\": \""
                + keyId + "\", \"private_key\": \"" + pem.replace("\n", "\\n") + "\", \"client_email\": \""
                + SIGNER + "\", \"token_uri\": \"https://oauth2.googleapis.com/token\"}";
        Path file = Files.createFile(keys.resolve("fleet-engine.json"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.write(file, json.getBytes(StandardCharsets.UTF_8), StandardOpenOption.TRUNCATE_EXISTING);
        // The public half, for the upstream-http provider's verify: a verifier needs no private key.
        String publicPem = "-----BEGIN PUBLIC KEY-----\n"
                + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(pair.getPublic().getEncoded())
                + "\n-----END PUBLIC KEY-----\n";
        Files.write(keys.resolve("fleet-engine.pub.pem"), publicPem.getBytes(StandardCharsets.US_ASCII));
    }

    private void recordPid() throws IOException {
        String pidFile = System.getenv("GATEWAY_PID_FILE");
        if (pidFile != null && !pidFile.isEmpty()) {
            Files.write(Paths.get(pidFile), (process.pid() + "\n").getBytes(StandardCharsets.UTF_8),
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        }
    }

    /** Once the gateway has exited, its PID may be reused: test.sh must not kill that number any more. */
    private void forgetPid() {
        String pidFile = System.getenv("GATEWAY_PID_FILE");
        if (pidFile == null || pidFile.isEmpty() || process.isAlive()) return;
        try {
            Files.deleteIfExists(Paths.get(pidFile));
        } catch (IOException e) {
            System.err.println("could not delete " + pidFile + ": " + e);
        }
    }

    private String waitForLog() throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(START_TIMEOUT_MILLIS);
        while (System.nanoTime() < deadline) {
            String text = logText();
            if (PUBLIC.matcher(text).find() && ADMIN.matcher(text).find()) return text;
            if (!process.isAlive()) throw new IllegalStateException("the gateway exited with " + process.exitValue() + ":\n" + text);
            Thread.sleep(50);
        }
        throw new IllegalStateException("the gateway did not say it listens within 30 s:\n" + logText());
    }

    private void waitUntilReady() throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(START_TIMEOUT_MILLIS);
        while (System.nanoTime() < deadline) {
            try {
                HttpURLConnection connection = (HttpURLConnection) new URL(adminUrl + "/readyz").openConnection();
                connection.setConnectTimeout(2_000);
                connection.setReadTimeout(2_000);
                if (connection.getResponseCode() == 200) return;
            } catch (IOException notYet) {
                // not accepting yet
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("/readyz did not answer 200 within 30 s:\n" + logText());
    }

    private static String find(Pattern pattern, String text) {
        Matcher matcher = pattern.matcher(text);
        if (!matcher.find()) throw new IllegalStateException("no match for " + pattern);
        return matcher.group(1);
    }

    /** A loopback port nobody listens on now: connections to it are refused. */
    static int unusedPort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    private static String secret(String prefix) {
        byte[] bytes = new byte[16];
        new SecureRandom().nextBytes(bytes);
        StringBuilder text = new StringBuilder(prefix);
        for (byte b : bytes) text.append(String.format("%02x", b));
        return text.toString();
    }

    private static String sha256(String text) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
            StringBuilder hex = new StringBuilder();
            for (byte b : digest) hex.append(String.format("%02x", b));
            return hex.toString();
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    private void deleteDirectory() {
        try (java.util.stream.Stream<Path> paths = Files.walk(directory)) {
            paths.sorted(java.util.Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            System.err.println("could not delete " + directory + ": " + e);
        }
    }
}
