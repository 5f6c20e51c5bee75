package dev.tokengate.android;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The default transport on loopback: a redirect is returned, never followed, and a silent server times out. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class UrlConnectionTransportTest {
    private static final TokenContext TRIP = TokenContext.trip("trip-42");

    @Test
    void aRedirectIsNeverFollowedAndIsAnInvalidResponseThatIsNotRetried() throws Exception {
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        AtomicInteger redirected = new AtomicInteger();
        AtomicInteger followed = new AtomicInteger();
        server.createContext("/v1/", exchange -> {
            redirected.incrementAndGet();
            exchange.getResponseHeaders().set("Location", "/elsewhere");
            exchange.sendResponseHeaders(302, -1);
            exchange.close();
        });
        server.createContext("/elsewhere", exchange -> {
            followed.incrementAndGet(); // where the app's credential would go
            exchange.sendResponseHeaders(200, -1);
            exchange.close();
        });
        server.start();
        try {
            String base = "http://127.0.0.1:" + server.getAddress().getPort();
            TokenProvider tokens = TokenProvider.builder(base, "acme-rides", () -> "s3cret-session").build();
            InvalidResponseException redirect = assertThrows(InvalidResponseException.class, () -> tokens.token(TRIP));
            assertEquals(302, redirect.status());
            assertEquals(1, redirected.get()); // not retried
            assertEquals(0, followed.get());
        } finally {
            server.stop(0);
        }
    }

    @Test
    void aServerThatNeverAnswersIsANetworkFailureCausedByATimeoutAndIsRetried() throws Exception {
        List<Socket> held = new CopyOnWriteArrayList<>();
        try (ServerSocket silent = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
            Thread acceptor = new Thread(() -> {
                try {
                    while (true) held.add(silent.accept()); // held open, never answered
                } catch (IOException closed) {
                    // the test is over
                }
            });
            acceptor.setDaemon(true);
            acceptor.start();
            TokenProvider tokens = TokenProvider.builder("http://127.0.0.1:" + silent.getLocalPort(), "acme-rides",
                    () -> "s3cret-session").transport(new UrlConnectionTransport(2_000, 300)).initialBackoffMillis(10).build();
            NetworkException timedOut = assertThrows(NetworkException.class, () -> tokens.token(TRIP));
            assertInstanceOf(SocketTimeoutException.class, timedOut.getCause());
            assertTrue(timedOut.isRetryable());
            assertEquals(3, held.size()); // maxAttempts
        } finally {
            for (Socket connection : held) connection.close();
        }
    }
}
