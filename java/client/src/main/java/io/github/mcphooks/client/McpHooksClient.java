package io.github.mcphooks.client;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;

/**
 * Sends one event to a running {@code mcp-hooks serve --transport http} ({@code POST
 * /hooks/fire}) and returns the server's verified outcome. JDK only: {@code java.net.http} and
 * {@code javax.crypto}, no dependency, so any Java program can use it.
 *
 * <p>The forward protocol v2 ({@link ForwardAuth}): the token never goes on the wire. Each
 * request carries a fresh nonce, the time, and {@code X-MCP-Hooks-Auth: v2=HMAC-SHA256(token,
 * request)} over the method, path, nonce, time, hooks-folder headers and the body's SHA-256;
 * an answer is believed only with {@code X-MCP-Hooks-Signature: v2=HMAC-SHA256(token,
 * answer)} over the nonce, the request's MAC, the status and the answer body's SHA-256, so it
 * is bound to this very request. The whole exchange has one deadline ({@code
 * MCP_HOOKS_FORWARD_TIMEOUT} seconds, default 5).
 *
 * <p><b>No JSON here.</b> The client takes the event as JSON text and hands back the outcome
 * as JSON text ({@link Answer#outcome()}): the bytes it signs and verifies are exactly the
 * caller's and the server's, and a caller reads them with the JSON library it already has
 * (the AgentScope adapter with agentscope-core's Jackson). A JSON codec of its own would be
 * a second parser of the same answers to keep in step with the first, for a client whose job
 * is the signature, not the shape.
 *
 * <p>Anything else (no server, a refused or timed-out connection, an unsigned, forged or
 * non-200 answer) never throws: the {@link Answer} says what broke ({@link Answer#failure()})
 * and a warning is logged ({@code System.Logger} "mcp-hooks"). The caller fails closed on it,
 * unless it was built with {@link Builder#failOpen(boolean) failOpen(true)}.
 *
 * <pre>{@code
 * McpHooksClient client = McpHooksClient.builder()
 *         .serverUrl("http://127.0.0.1:8765")      // what `mcp-hooks serve` printed
 *         .token(System.getenv("MCP_HOOKS_TOKEN"))
 *         .build();
 * Answer a = client.send("before_tool", "{\"event_type\": \"before_tool\", "
 *         + "\"tool_name\": \"Shell\", \"tool_input\": {\"command\": \"rm -rf /\"}}");
 * // a.outcome(): {"event_type": "before_tool", "decision": "deny", ...}, or a.failure()
 * }</pre>
 */
public final class McpHooksClient {
    /** Environment variables read by {@link Builder#fromEnvironment()}. */
    public static final String SERVER_ENV = "MCP_HOOKS_SERVER";
    public static final String TOKEN_ENV = "MCP_HOOKS_TOKEN";
    public static final String TIMEOUT_ENV = "MCP_HOOKS_FORWARD_TIMEOUT";
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(5);

    static final String FIRE_PATH = "/hooks/fire";
    static final String NONCE_HEADER = "X-MCP-Hooks-Nonce";
    static final String TIME_HEADER = "X-MCP-Hooks-Time";
    static final String AUTH_HEADER = "X-MCP-Hooks-Auth";
    static final String SIGNATURE_HEADER = "X-MCP-Hooks-Signature";
    static final String USER_DIR_HEADER = "X-MCP-Hooks-User-Dir";
    static final String PROJECT_DIR_HEADER = "X-MCP-Hooks-Project-Dir";
    static final int MAX_ANSWER = 16 << 20;
    /** A query of {@link #sendAsync(String, String, String)}: plain name=value pairs. */
    private static final Pattern QUERY = Pattern.compile(
            "(?:[A-Za-z0-9._-]+=[A-Za-z0-9._-]*(?:&(?!$)|$))*");

    private static final System.Logger LOG = System.getLogger("mcp-hooks");

    private final String serverUrl;
    private final URI fireUri;
    private final String token;
    private final String userDirHeader;
    private final String projectDirHeader;
    private final Duration timeout;
    private final boolean failOpen;
    private final HttpClient http;

    private McpHooksClient(Builder b, URI fireUri) {
        this.serverUrl = b.serverUrl;
        this.fireUri = fireUri;
        this.token = b.token;
        this.userDirHeader = b.userDir == null ? null
                : ForwardAuth.quote(b.userDir.toString());
        this.projectDirHeader = b.projectDir == null ? null
                : ForwardAuth.quote(b.projectDir.toString());
        this.timeout = b.timeout;
        this.failOpen = b.failOpen;
        this.http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(b.timeout)
                .followRedirects(HttpClient.Redirect.NEVER)
                .build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The server's base URL, as given (without {@code /mcp}). */
    public String serverUrl() {
        return serverUrl;
    }

    /**
     * Whether the caller should let an event through on a failed forward ({@code true}) or
     * deny it: the client only carries the choice, its caller makes it.
     */
    public boolean failOpen() {
        return failOpen;
    }

    /** The deadline of one whole forward. */
    public Duration timeout() {
        return timeout;
    }

    /**
     * Send one event and wait for the answer (at most {@link #timeout()}).
     *
     * @param eventType the event's {@code event_type} (for the warning of a failed forward)
     * @param eventJson the {@code Event} fields as a JSON object: {@code event_type}
     *     (required), {@code session_id}, {@code work_dir}, {@code tool_name}, {@code
     *     tool_input}, {@code tool_use_id}, {@code tool_output}, {@code error}, {@code
     *     payload}, {@code context}
     */
    public Answer send(String eventType, String eventJson) {
        return sendAsync(eventType, eventJson).join();
    }

    /** {@link #send} without blocking: the future always completes normally. */
    public CompletableFuture<Answer> sendAsync(String eventType, String eventJson) {
        return sendAsync(eventType, eventJson, null);
    }

    /**
     * {@link #sendAsync(String, String)} with a query on {@code /hooks/fire} (covered by the
     * request's MAC): how a hook's ask reaches a person. {@code null} or empty: none, the
     * server waits out of band until the ask's timeout; {@code "ask=now"}: the fallback at
     * once, a deny naming the pending ask; {@code "ask=native&channel=NAME"} (and {@code
     * "&confirmed=ask-ID"}): the caller's framework asks the person (docs/ask.md).
     */
    public CompletableFuture<Answer> sendAsync(String eventType, String eventJson,
                                               String query) {
        if (eventType == null || eventType.isEmpty()) {
            return CompletableFuture.completedFuture(Answer.failed("before_tool",
                    "the event has no event_type (a bug in the caller)"));
        }
        if (query != null && !QUERY.matcher(query).matches()) {
            return CompletableFuture.completedFuture(Answer.failed(eventType,
                    "the query " + query + " is not name=value pairs of letters, digits and"
                            + " . _ - joined by & (a bug in the caller)"));
        }
        Sent sent;
        try {
            sent = request(eventJson, query == null || query.isEmpty() ? fireUri
                    : URI.create(fireUri + "?" + query));
        } catch (RuntimeException exc) {
            return CompletableFuture.completedFuture(failed(eventType,
                    "the event could not be sent: " + exc));
        }
        CompletableFuture<HttpResponse<byte[]>> exchange;
        try {
            exchange = http.sendAsync(sent.request, capped(MAX_ANSWER));
        } catch (RuntimeException exc) {
            return CompletableFuture.completedFuture(failed(eventType, "no answer from "
                    + serverUrl + " (" + exc + ")"));
        }
        return exchange.orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS)
                .handle((response, exc) -> {
                    if (exc != null) {
                        exchange.cancel(true);
                        return failed(eventType, unreachable(exc));
                    }
                    return judge(eventType, sent, response);
                });
    }

    /**
     * A forward that failed after the answer came (a verified body that is not an outcome,
     * found by the caller's JSON reader): logged as the client's own failures are.
     */
    public Answer failed(String eventType, String why) {
        LOG.log(System.Logger.Level.WARNING, "mcp-hooks: {0} event not forwarded: {1}",
                eventType, why);
        return Answer.failed(eventType, why);
    }

    private record Sent(HttpRequest request, String nonce, String mac) {
    }

    private Sent request(String eventJson, URI uri) {
        byte[] body = eventJson.getBytes(StandardCharsets.UTF_8);
        String nonce = ForwardAuth.nonce();
        String time = Long.toString(Instant.now().getEpochSecond());
        String target = uri.getRawPath()
                + (uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery());
        String mac = ForwardAuth.requestMac(token, "POST", target, nonce, time,
                userDirHeader == null ? "" : userDirHeader,
                projectDirHeader == null ? "" : projectDirHeader, body);
        HttpRequest.Builder request = HttpRequest.newBuilder(uri)
                .timeout(timeout)
                .header("Content-Type", "application/json")
                .header(NONCE_HEADER, nonce)
                .header(TIME_HEADER, time)
                .header(AUTH_HEADER, "v2=" + mac)
                .POST(HttpRequest.BodyPublishers.ofByteArray(body));
        if (userDirHeader != null) {
            request.header(USER_DIR_HEADER, userDirHeader);
        }
        if (projectDirHeader != null) {
            request.header(PROJECT_DIR_HEADER, projectDirHeader);
        }
        return new Sent(request.build(), nonce, mac);
    }

    private Answer judge(String eventType, Sent sent, HttpResponse<byte[]> response) {
        byte[] body = response.body();
        int status = response.statusCode();
        String signature = response.headers().firstValue(SIGNATURE_HEADER).orElse("");
        String expected = "v2=" + ForwardAuth.answerMac(token, sent.nonce, sent.mac, status,
                body);
        if (!MessageDigest.isEqual(signature.getBytes(StandardCharsets.US_ASCII),
                expected.getBytes(StandardCharsets.US_ASCII))) {
            return failed(eventType, "the answer from " + serverUrl + " (HTTP " + status
                    + ") does not prove it comes from the mcp-hooks server holding the token"
                    + " (no valid " + SIGNATURE_HEADER + "; a wrong token, or not an mcp-hooks"
                    + " server speaking the forward protocol v2)");
        }
        String text = new String(body, StandardCharsets.UTF_8);
        if (status != 200) {
            String first = text.strip().lines().findFirst().orElse("");
            return failed(eventType, serverUrl + " answered " + status
                    + (first.isEmpty() ? "" : ": " + cap(first, 300)));
        }
        return Answer.verified(eventType, text);
    }

    private String unreachable(Throwable exc) {
        Throwable cause = exc;
        while ((cause instanceof CompletionException || cause instanceof ExecutionException)
                && cause.getCause() != null) {
            cause = cause.getCause();
        }
        if (cause instanceof TimeoutException || cause instanceof HttpTimeoutException) {
            return "no answer from " + serverUrl + " within " + seconds(timeout)
                    + " s (the deadline; raise " + TIMEOUT_ENV + " or the client's timeout)";
        }
        if (cause instanceof ConnectException) {
            return "no answer from " + serverUrl + " (connection refused: is `mcp-hooks serve"
                    + " --transport http` running there?)";
        }
        String message = cause.getMessage();
        return "no answer from " + serverUrl + " (" + cause.getClass().getSimpleName()
                + (message == null ? "" : ": " + cap(message, 300)) + ")";
    }

    private static String cap(String text, int max) {
        return text.length() <= max ? text : text.substring(0, max) + "...";
    }

    private static String seconds(Duration d) {
        return String.format(Locale.ROOT, "%.1f", d.toMillis() / 1000.0);
    }

    /** The body, refused past {@code max} bytes (an outcome is far smaller). */
    private static HttpResponse.BodyHandler<byte[]> capped(int max) {
        return info -> new HttpResponse.BodySubscriber<byte[]>() {
            private final CompletableFuture<byte[]> result = new CompletableFuture<>();
            private final ByteArrayOutputStream out = new ByteArrayOutputStream();
            private Flow.Subscription subscription;

            @Override
            public CompletionStage<byte[]> getBody() {
                return result;
            }

            @Override
            public void onSubscribe(Flow.Subscription s) {
                subscription = s;
                s.request(Long.MAX_VALUE);
            }

            @Override
            public void onNext(List<ByteBuffer> items) {
                for (ByteBuffer item : items) {
                    byte[] chunk = new byte[item.remaining()];
                    item.get(chunk);
                    out.write(chunk, 0, chunk.length);
                }
                if (out.size() > max) {
                    subscription.cancel();
                    result.completeExceptionally(new IOException("answer over " + max + " bytes"));
                }
            }

            @Override
            public void onError(Throwable error) {
                result.completeExceptionally(error);
            }

            @Override
            public void onComplete() {
                result.complete(out.toByteArray());
            }
        };
    }

    /** How to reach the server; {@link #build()} checks it. */
    public static final class Builder {
        private String serverUrl;
        private String token;
        private Path userDir;
        private Path projectDir;
        private Duration timeout;
        private boolean failOpen;

        private Builder() {
        }

        /**
         * The server's URL as {@code mcp-hooks serve --transport http} prints it ({@code
         * http://127.0.0.1:8765/mcp}; the {@code /mcp} is dropped).
         */
        public Builder serverUrl(String url) {
            this.serverUrl = url;
            return this;
        }

        /** The server's token ({@code --token} or its {@code MCP_HOOKS_TOKEN}). */
        public Builder token(String token) {
            this.token = token;
            return this;
        }

        /**
         * The user hooks folder the server must load ({@code X-MCP-Hooks-User-Dir}); the
         * server answers {@code 422} if it loads another one. Default: not checked.
         */
        public Builder userDir(Path dir) {
            this.userDir = dir;
            return this;
        }

        /** The project the server must serve ({@code X-MCP-Hooks-Project-Dir}), as above. */
        public Builder projectDir(Path dir) {
            this.projectDir = dir;
            return this;
        }

        /** The deadline of a whole forward; default {@code MCP_HOOKS_FORWARD_TIMEOUT} or 5 s. */
        public Builder timeout(Duration timeout) {
            this.timeout = timeout;
            return this;
        }

        /** Let events through (with a warning) when the server cannot decide; default false. */
        public Builder failOpen(boolean failOpen) {
            this.failOpen = failOpen;
            return this;
        }

        /** Server and token from {@code MCP_HOOKS_SERVER} and {@code MCP_HOOKS_TOKEN}. */
        public Builder fromEnvironment() {
            String url = System.getenv(SERVER_ENV);
            if (url != null && !url.isBlank()) {
                serverUrl = url.strip();
            }
            String secret = System.getenv(TOKEN_ENV);
            if (secret != null && !secret.isBlank()) {
                token = secret.strip();
            }
            return this;
        }

        /**
         * @throws IllegalArgumentException no server URL, not an http(s) URL, or no token;
         *     the message says which and how to give it
         */
        public McpHooksClient build() {
            if (serverUrl == null || serverUrl.isBlank()) {
                throw new IllegalArgumentException("McpHooksClient: no server URL: pass "
                        + "serverUrl(\"http://127.0.0.1:8765\") (what `mcp-hooks serve "
                        + "--transport http` printed) or set " + SERVER_ENV);
            }
            if (token == null || token.isBlank()) {
                throw new IllegalArgumentException("McpHooksClient: no token for " + serverUrl
                        + ": pass token(...) (the server's --token) or set " + TOKEN_ENV);
            }
            if (timeout == null) {
                timeout = timeoutFromEnvironment();
            }
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("McpHooksClient: timeout must be positive, got "
                        + timeout);
            }
            String base = serverUrl.strip();
            while (base.endsWith("/")) {
                base = base.substring(0, base.length() - 1);
            }
            if (base.endsWith("/mcp")) {
                base = base.substring(0, base.length() - "/mcp".length());
            }
            URI uri;
            try {
                uri = new URI(base + FIRE_PATH);
            } catch (URISyntaxException exc) {
                throw new IllegalArgumentException("McpHooksClient: " + serverUrl
                        + " is not a URL: " + exc.getMessage());
            }
            String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
            if (!scheme.equals("http") && !scheme.equals("https") || uri.getHost() == null) {
                throw new IllegalArgumentException("McpHooksClient: " + serverUrl
                        + " is not an http:// or https:// URL");
            }
            serverUrl = base;
            return new McpHooksClient(this, uri);
        }

        static Duration timeoutFromEnvironment() {
            String raw = System.getenv(TIMEOUT_ENV);
            if (raw == null || raw.isBlank()) {
                return DEFAULT_TIMEOUT;
            }
            try {
                double seconds = Double.parseDouble(raw.strip());
                if (seconds > 0 && seconds < 86400) {
                    return Duration.ofNanos((long) (seconds * 1e9));
                }
            } catch (NumberFormatException ignored) {
                // the warning below
            }
            LOG.log(System.Logger.Level.WARNING, "mcp-hooks: {0}={1} is not a number of "
                    + "seconds above 0; using {2} s", TIMEOUT_ENV, raw, DEFAULT_TIMEOUT.getSeconds());
            return DEFAULT_TIMEOUT;
        }
    }
}
