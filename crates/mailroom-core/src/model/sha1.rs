//! SHA-1 digests in hex: the reference's project uids, reservation file names and attachment
//! names. The digest itself is the Git engine's (`mailroom_git::sha1`), which also names the
//! objects the archive writes.

pub use mailroom_git::sha1;

/// The SHA-1 of `bytes` in lower-case hex (40 digits).
pub fn sha1_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(40);
    for byte in sha1(&[bytes]) {
        hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
        hex.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    hex
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_match_published_vectors() {
        // FIPS 180 examples.
        assert_eq!(sha1_hex(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(sha1_hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        let long = b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        assert_eq!(sha1_hex(long), "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    }
}
