package io.github.mcphooks.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The forward client against the protocol's test vector and against a JDK HTTP server on a
 * free loopback port that answers as a v2 server would (and as a broken or hostile one would).
 * What the adapter makes of an answer (the decision, failing closed) is its DecisionTest.
 */
class McpHooksClientTest {
    // FORWARD-V2.md's test vector (tests/test_hosts_forward.py::VECTOR on the Python side,
    // checked there against `openssl dgst -sha256 -hmac`)
    static final String TOKEN = "s3cret-token";
    static final String NONCE = "00112233445566778899aabbccddeeff";
    static final String TIME = "1700000000";
    static final byte[] BODY = "{\"event_type\":\"before_tool\"}".getBytes(StandardCharsets.UTF_8);
    static final String REQUEST_MAC =
            "a9c878b8f0f0c42ae4d25402141ee471d9155379859cdd144b490c1a8451d37e";
    static final byte[] ANSWER = "{\"decision\":\"allow\"}".getBytes(StandardCharsets.UTF_8);
    static final String ANSWER_MAC =
            "121c750827ae12c483c621c5ce74aa4cde77a4accbcc2df178217c3a32a0f97d";

    private HttpServer server;
    private final List<Map<String, String>> seen = new ArrayList<>();
    private final CountDownLatch release = new CountDownLatch(1);

    @AfterEach
    void stop() {
        release.countDown();
        if (server != null) {
            server.stop(0);
        }
    }

    @Test
    void theBodyDigestsAreTheTestVectors() {
        assertEquals("435c977633e90144de34612515408e063ccb95fa9e6244b6ab358187f4090938",
                ForwardAuth.sha256Hex(BODY));
        assertEquals("6b838faadcc5ae20ac196a2be7bdcf932f9589a14d7ecbcd9d61e5b94c80d03a",
                ForwardAuth.sha256Hex(ANSWER));
    }

    @Test
    void theRequestMacIsTheTestVectors() {
        assertEquals(REQUEST_MAC, ForwardAuth.requestMac(TOKEN, "POST", "/hooks/fire", NONCE,
                TIME, "", "", BODY));
    }

    @Test
    void theAnswerMacIsTheTestVectors() {
        assertEquals(ANSWER_MAC, ForwardAuth.answerMac(TOKEN, NONCE, REQUEST_MAC, 200, ANSWER));
    }

    @Test
    void everyPartOfTheRequestIsInItsMac() {
        String[][] changed = {
            {"PUT", "/hooks/fire", NONCE, TIME, "", ""},
            {"POST", "/hooks/fire?x=1", NONCE, TIME, "", ""},
            {"POST", "/hooks/fire", NONCE.replace('0', '1'), TIME, "", ""},
            {"POST", "/hooks/fire", NONCE, "1700000001", "", ""},
            {"POST", "/hooks/fire", NONCE, TIME, "/u", ""},
            {"POST", "/hooks/fire", NONCE, TIME, "", "/p"},
        };
        for (String[] c : changed) {
            assertFalse(REQUEST_MAC.equals(ForwardAuth.requestMac(TOKEN, c[0], c[1], c[2], c[3],
                    c[4], c[5], BODY)), String.join(" ", c));
        }
        assertFalse(REQUEST_MAC.equals(ForwardAuth.requestMac(TOKEN, "POST", "/hooks/fire",
                NONCE, TIME, "", "", "{}".getBytes(StandardCharsets.UTF_8))));
    }

    // -- against a server ------------------------------------------------------------------

    /** A v2 server: checks the request's MAC, answers {@code answer(body)} signed. */
    private McpHooksClient serve(Function<HttpExchange, Reply> answer, McpHooksClient.Builder b)
            throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/", exchange -> {
            try (exchange) {
                byte[] body = exchange.getRequestBody().readAllBytes();
                var h = exchange.getRequestHeaders();
                String nonce = h.getFirst(McpHooksClient.NONCE_HEADER);
                String auth = h.getFirst(McpHooksClient.AUTH_HEADER);
                String user = h.getFirst(McpHooksClient.USER_DIR_HEADER);
                String project = h.getFirst(McpHooksClient.PROJECT_DIR_HEADER);
                String query = exchange.getRequestURI().getRawQuery();
                String mac = ForwardAuth.requestMac(TOKEN, exchange.getRequestMethod(),
                        exchange.getRequestURI().getRawPath()
                                + (query == null ? "" : "?" + query), nonce,
                        h.getFirst(McpHooksClient.TIME_HEADER), user == null ? "" : user,
                        project == null ? "" : project, body);
                synchronized (seen) {
                    seen.add(Map.of("auth", String.valueOf(auth), "expected", "v2=" + mac,
                            "authorization", String.valueOf(h.getFirst("Authorization")),
                            "path", exchange.getRequestURI().getRawPath(),
                            "query", String.valueOf(query),
                            "user", String.valueOf(user), "body", new String(body,
                                    StandardCharsets.UTF_8)));
                }
                Reply reply = answer.apply(exchange);
                if (reply.hang) {
                    release.await(60, TimeUnit.SECONDS);
                    return;
                }
                byte[] out = reply.body.getBytes(StandardCharsets.UTF_8);
                String signature = reply.signature != null ? reply.signature
                        : "v2=" + ForwardAuth.answerMac(TOKEN, nonce, mac, reply.status, out);
                if (!signature.isEmpty()) {
                    exchange.getResponseHeaders().add(McpHooksClient.SIGNATURE_HEADER, signature);
                }
                exchange.sendResponseHeaders(reply.status, out.length == 0 ? -1 : out.length);
                try (OutputStream os = exchange.getResponseBody()) {
                    os.write(out);
                }
            } catch (InterruptedException exc) {
                Thread.currentThread().interrupt();
            }
        });
        server.start();
        return b.serverUrl("http://127.0.0.1:" + server.getAddress().getPort() + "/mcp")
                .token(TOKEN).build();
    }

    record Reply(int status, String body, String signature, boolean hang) {
        static Reply ok(String body) {
            return new Reply(200, body, null, false);
        }
    }

    static final String RM_RF = "{\"event_type\": \"before_tool\", \"tool_name\": \"Shell\", "
            + "\"tool_input\": {\"command\": \"rm -rf /\"}}";

    @Test
    void aSignedOutcomeIsTheAnswerAsSentAndTheTokenNeverGoesOnTheWire() throws IOException {
        String outcome = "{\"event_type\": \"before_tool\", \"decision\": \"deny\", "
                + "\"reason\": \"no r\u00e9m\", \"blocked_by\": \"g\"}";
        McpHooksClient client = serve(x -> Reply.ok(outcome),
                McpHooksClient.builder().userDir(Path.of("/tmp/a dir/\u00fc")));
        Answer a = client.send("before_tool", RM_RF);
        assertEquals(outcome, a.outcome());
        assertNull(a.failure());
        assertEquals("before_tool", a.eventType());
        Map<String, String> request = seen.get(0);
        assertEquals(request.get("expected"), request.get("auth"));
        assertEquals("/hooks/fire", request.get("path"));
        assertEquals(RM_RF, request.get("body"));
        assertEquals("null", request.get("authorization"));
        assertEquals("/tmp/a%20dir/%C3%BC", request.get("user"));
        assertFalse(String.join(" ", request.values()).contains(TOKEN));
    }

    @Test
    void anUnsignedAnswerIsNotBelieved() throws IOException {
        McpHooksClient client = serve(x -> new Reply(200,
                "{\"event_type\": \"before_tool\", \"decision\": \"allow\"}", "", false),
                McpHooksClient.builder());
        Answer a = client.send("before_tool", RM_RF);
        assertNull(a.outcome());
        assertTrue(a.failure().contains("does not prove it comes from the mcp-hooks server"),
                a.failure());
    }

    @Test
    void anAnswerSignedForAnotherRequestOrStatusIsNotBelieved() throws IOException {
        String allow = "{\"event_type\": \"before_tool\", \"decision\": \"allow\"}";
        String replayed = "v2=" + ForwardAuth.answerMac(TOKEN, NONCE, REQUEST_MAC, 200,
                allow.getBytes(StandardCharsets.UTF_8));
        McpHooksClient client = serve(x -> new Reply(200, allow, replayed, false),
                McpHooksClient.builder());
        Answer a = client.send("before_tool", RM_RF);
        assertNull(a.outcome());
        assertNotNull(a.failure());
    }

    @Test
    void aSignedRefusalIsAFailedForwardSayingWhy() throws IOException {
        McpHooksClient client = serve(x -> new Reply(422,
                "this server runs the user hooks of /a, not those of /b\n", null, false),
                McpHooksClient.builder());
        Answer a = client.send("before_tool", RM_RF);
        assertNull(a.outcome());
        assertTrue(a.failure().contains("answered 422: this server runs the user hooks of /a"),
                a.failure());
    }

    @Test
    void aSignedBodyIsHandedOverUnreadWhateverItHolds() throws IOException {
        // the shape is the caller's to judge (the adapter's DecisionTest): the client vouches
        // only that the server holding the token sent these bytes for this request
        McpHooksClient client = serve(x -> Reply.ok("<html>hello</html>"),
                McpHooksClient.builder());
        Answer a = client.send("before_tool", RM_RF);
        assertEquals("<html>hello</html>", a.outcome());
        assertNull(a.failure());
    }

    @Test
    void noAnswerWithinTheDeadlineIsAFailedForward() throws IOException {
        McpHooksClient client = serve(x -> new Reply(0, "", null, true),
                McpHooksClient.builder().timeout(Duration.ofMillis(300)));
        Answer a = client.send("before_tool", RM_RF);
        assertTrue(a.failure().contains("within 0.3 s"), a.failure());
    }

    @Test
    void aClosedPortIsAFailedForwardSayingNoServerAnswered() throws IOException {
        int port;
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = socket.getLocalPort();
        }
        McpHooksClient client = McpHooksClient.builder().serverUrl("http://127.0.0.1:" + port)
                .token(TOKEN).build();
        Answer a = client.send("before_tool", RM_RF);
        assertNull(a.outcome());
        assertTrue(a.failure().contains("connection refused"), a.failure());
    }

    @Test
    void aQueryGoesOnTheRequestLineAndIntoItsMac() throws IOException {
        String outcome = "{\"event_type\": \"before_tool\", \"decision\": \"allow\"}";
        McpHooksClient client = serve(x -> Reply.ok(outcome), McpHooksClient.builder());
        String query = "ask=native&channel=agentscope-java&confirmed=ask-0123456789";
        Answer a = client.sendAsync("before_tool", RM_RF, query).join();
        assertEquals(outcome, a.outcome(), a.failure());
        assertEquals(query, seen.get(0).get("query"));
        assertEquals(seen.get(0).get("expected"), seen.get(0).get("auth"));
    }

    @Test
    void aQueryThatIsNotPlainPairsIsNotSent() throws IOException {
        McpHooksClient client = serve(x -> Reply.ok("{}"), McpHooksClient.builder());
        for (String bad : List.of("ask=now&", "ask=a b", "ask=%41", "&ask=now")) {
            Answer a = client.sendAsync("before_tool", RM_RF, bad).join();
            assertTrue(a.failure() != null && a.failure().contains("not name=value pairs"),
                    bad + ": " + a);
        }
        assertEquals(List.of(), seen);
    }

    @Test
    void anEventWithoutItsTypeIsNotSent() {
        McpHooksClient client = McpHooksClient.builder().serverUrl("http://127.0.0.1:1")
                .token(TOKEN).build();
        Answer a = client.send("", "{}");
        assertTrue(a.failure().contains("no event_type"), a.failure());
    }

    @Test
    void aMissingTokenOrUrlIsRefusedWhenBuilt() {
        var noToken = assertThrows(IllegalArgumentException.class,
                () -> McpHooksClient.builder().serverUrl("http://127.0.0.1:1").build());
        assertTrue(noToken.getMessage().contains("MCP_HOOKS_TOKEN"), noToken.getMessage());
        var notHttp = assertThrows(IllegalArgumentException.class,
                () -> McpHooksClient.builder().serverUrl("ftp://x").token("t").build());
        assertTrue(notHttp.getMessage().contains("not an http"), notHttp.getMessage());
    }
}
