import Crypto

/// What the server keeps of a token, and what a wiped device keeps to send its receipt with:
/// the SHA-256 of the token's UTF-8, in lowercase hexadecimal.
package enum TokenHash {
    package static func sha256(_ token: String) -> String {
        Hex.encode(SHA256.hash(data: Array(token.utf8)))
    }
}
