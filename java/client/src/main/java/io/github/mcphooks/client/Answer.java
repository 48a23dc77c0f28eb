package io.github.mcphooks.client;

/**
 * What came back for one event: the server's outcome as JSON text, signed by the token's
 * holder and answered with {@code 200} ({@link #outcome()}), or why there is none ({@link
 * #failure()}: unreachable, timed out, unsigned, a refusal such as {@code 422}, ...). Exactly
 * one of the two is set. The outcome is the JSON of {@code mcp-hooks fire --json}; the client
 * does not read it (see {@link McpHooksClient}).
 *
 * @param eventType the event this answers ({@code before_tool}, ...)
 * @param outcome the verified outcome JSON, or null on a failure
 * @param failure what broke, for a person to read, or null when {@code outcome} is set
 */
public record Answer(String eventType, String outcome, String failure) {
    static Answer verified(String eventType, String outcome) {
        return new Answer(eventType, outcome, null);
    }

    static Answer failed(String eventType, String failure) {
        return new Answer(eventType, null, failure);
    }
}
