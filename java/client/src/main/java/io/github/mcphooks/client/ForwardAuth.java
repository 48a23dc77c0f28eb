package io.github.mcphooks.client;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The forward protocol v2's cryptography, as the Python side's {@code
 * mcp_hooks/hosts/forward_auth.py}: the request and answer MACs (public, for tests and other
 * clients), the nonce, and the hooks-folder headers' quoting. {@link McpHooksClient} signs and
 * verifies with these.
 */
public final class ForwardAuth {
    private static final SecureRandom RANDOM = new SecureRandom();

    private ForwardAuth() {
    }

    /**
     * The request MAC of the forward protocol v2: lowercase hex HMAC-SHA256, keyed by the
     * token's UTF-8, of {@code "mcp-hooks/2 request\n" + method + "\n" + pathAndQuery + "\n" +
     * nonce + "\n" + time + "\n" + userDir + "\n" + projectDir + "\n" + hex(SHA256(body))}.
     */
    public static String requestMac(String token, String method, String pathAndQuery,
                                    String nonce, String time, String userDirHeader,
                                    String projectDirHeader, byte[] body) {
        String message = "mcp-hooks/2 request\n" + method + "\n" + pathAndQuery + "\n" + nonce
                + "\n" + time + "\n" + userDirHeader + "\n" + projectDirHeader + "\n"
                + sha256Hex(body);
        return hmacHex(token, message);
    }

    /**
     * The answer MAC: lowercase hex HMAC-SHA256 of {@code "mcp-hooks/2 answer\n" + nonce +
     * "\n" + requestMacHex + "\n" + status + "\n" + hex(SHA256(answer body))}.
     */
    public static String answerMac(String token, String nonce, String requestMacHex, int status,
                                   byte[] body) {
        String message = "mcp-hooks/2 answer\n" + nonce + "\n" + requestMacHex + "\n" + status
                + "\n" + sha256Hex(body);
        return hmacHex(token, message);
    }

    static String sha256Hex(byte[] data) {
        try {
            return hex(MessageDigest.getInstance("SHA-256").digest(data));
        } catch (GeneralSecurityException exc) {
            throw new IllegalStateException("this JDK has no SHA-256", exc);
        }
    }

    private static String hmacHex(String token, String message) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(token.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
            return hex(mac.doFinal(message.getBytes(StandardCharsets.UTF_8)));
        } catch (GeneralSecurityException exc) {
            throw new IllegalStateException("this JDK has no HmacSHA256", exc);
        }
    }

    private static String hex(byte[] bytes) {
        StringBuilder out = new StringBuilder(bytes.length * 2);
        for (byte b : bytes) {
            out.append(Character.forDigit((b >> 4) & 0xf, 16)).append(Character.forDigit(b & 0xf, 16));
        }
        return out.toString();
    }

    static String nonce() {
        byte[] bytes = new byte[16];
        RANDOM.nextBytes(bytes);
        return hex(bytes);
    }

    /** Python's {@code urllib.parse.quote(s)}: UTF-8, all but letters, digits, {@code _.-~/}. */
    static String quote(String s) {
        StringBuilder out = new StringBuilder();
        for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
            int c = b & 0xff;
            if (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
                    || c == '_' || c == '.' || c == '-' || c == '~' || c == '/') {
                out.append((char) c);
            } else {
                out.append('%').append(String.format("%02X", c));
            }
        }
        return out.toString();
    }
}
