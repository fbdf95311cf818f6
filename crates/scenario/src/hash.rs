//! Hashes in the form results and verification write them.

use sha2::{Digest, Sha256};

/// Lowercase hex SHA-256, the form results and verification use.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}
