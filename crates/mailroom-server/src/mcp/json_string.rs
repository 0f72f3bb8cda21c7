//! Quoting a text as a JSON string straight into an answer.
//!
//! Every tool answer carries its result twice: as JSON and, quoted, as the text content. The
//! result is JSON text, so it holds a quote every few bytes and long runs without one (message
//! bodies); quoting it with `serde_json::to_string` went byte by byte into a string of its own,
//! then copied that into the answer: a tenth of the server's time under an inbox load.

/// Each byte of the word, repeated: `0x0101…` times a byte.
const ONES: u64 = u64::from_ne_bytes([1; 8]);
const HIGH_BITS: u64 = ONES * 0x80;

/// The bytes of `word` (read little-endian) that JSON must escape: a quote, a backslash or a
/// control character (below 0x20), each marked by its high bit. The lowest mark is exact; the
/// borrow tricks can only add false marks above a true one, and only the lowest is used.
fn escape_marks(word: u64) -> u64 {
    let zero_bytes = |v: u64| v.wrapping_sub(ONES) & !v & HIGH_BITS;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGH_BITS;
    zero_bytes(word ^ (ONES * u64::from(b'"')))
        | zero_bytes(word ^ (ONES * u64::from(b'\\')))
        | below_space
}

fn needs_escape(byte: u8) -> bool {
    byte == b'"' || byte == b'\\' || byte < 0x20
}

/// The index of the first byte at or after `from` that needs escaping, or `bytes.len()`.
/// Eight bytes at a time: a result text has long runs without a quote (message bodies).
fn next_escape(bytes: &[u8], mut from: usize) -> usize {
    while let Some(chunk) = bytes.get(from..from + 8) {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        let marks = escape_marks(word);
        if marks != 0 {
            return from + (marks.trailing_zeros() / 8) as usize;
        }
        from += 8;
    }
    bytes[from..]
        .iter()
        .position(|&byte| needs_escape(byte))
        .map_or(bytes.len(), |offset| from + offset)
}

/// Appends `text` as a JSON string, escaped exactly as `serde_json` escapes it (`\"`, `\\`,
/// the short forms of `\b \f \n \r \t`, `\u00XX` in lower-case hex for other control
/// characters; everything else as is).
pub fn push_json_string(out: &mut String, text: &str) {
    out.reserve(text.len() + 2);
    out.push('"');
    let bytes = text.as_bytes();
    let mut copied = 0;
    loop {
        let at = next_escape(bytes, copied);
        // Escapes are ASCII, so `at` is on a character boundary.
        out.push_str(&text[copied..at]);
        let Some(&byte) = bytes.get(at) else { break };
        let short = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            _ => "",
        };
        if short.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0xf)]));
        } else {
            out.push_str(short);
        }
        copied = at + 1;
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn quoted(text: &str) -> String {
        let mut out = String::from("head:");
        push_json_string(&mut out, text);
        out
    }

    #[test]
    fn every_byte_that_needs_escaping_is_escaped_as_serde_does() {
        for byte in 0u8..0x80 {
            let text = format!("abcdefgh{}ijklmnop", char::from(byte));
            let expected = format!("head:{}", serde_json::to_string(&text).expect("quoted"));
            assert_eq!(quoted(&text), expected, "byte {byte:#x}");
        }
        assert_eq!(quoted(""), "head:\"\"");
    }

    #[test]
    fn an_escape_is_found_at_every_place_in_a_word() {
        let letters = "abcdefghijklmnopqrstuvwxyz";
        for at in 0..24 {
            // With the bytes just above an escape, which the word test may mark falsely.
            let specials = ["\"", "\\", "\u{1}", "\u{1f}", "\"\u{1}", "\u{0}\"", "\\\\"];
            for special in specials.into_iter().chain(["\"#", "\\]", "\u{1} "]) {
                let text = format!("{}{special}{}", &letters[..at], &letters[at..]);
                let expected = format!("head:{}", serde_json::to_string(&text).expect("quoted"));
                assert_eq!(quoted(&text), expected, "{special:?} at {at}");
            }
        }
    }

    proptest! {
        /// Any text, with escapes anywhere in or across eight-byte words.
        #[test]
        fn quoting_matches_serde(text in "[a-z\"\\\\\n\t\u{0}\u{1f}\u{7f}é🚀 ]{0,40}") {
            let expected = format!("head:{}", serde_json::to_string(&text).expect("quoted"));
            prop_assert_eq!(quoted(&text), expected);
        }
    }
}
