package io.github.mcphooks.agentscope;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The adapter's JSON: Jackson, which agentscope-core brings (and parses tool calls with), so
 * the adapter adds no JSON library of its own. One mapper of ours, not AgentScope's
 * replaceable {@code JsonUtils} codec: the server's signed answer is read the same way
 * whatever codec an application installs, and trailing text after it is refused.
 */
final class Jackson {
    private static final ObjectMapper MAPPER = new ObjectMapper()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    private Jackson() {
    }

    /** {@code value} (maps, lists, strings, numbers, booleans, null) as JSON text. */
    static String write(Object value) {
        try {
            return MAPPER.writeValueAsString(value);
        } catch (JsonProcessingException exc) {
            throw new IllegalArgumentException("not writable as JSON: " + exc.getOriginalMessage(),
                    exc);
        }
    }

    /** One JSON value (maps, lists, strings, numbers, booleans, null). */
    static Object parse(String text) {
        try {
            return MAPPER.readValue(text, Object.class);
        } catch (JsonProcessingException exc) {
            throw new IllegalArgumentException(exc.getOriginalMessage(), exc);
        }
    }
}
