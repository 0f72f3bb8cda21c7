//! Standard Webhooks signing (standardwebhooks.com): the secret `whsec_<base64 key>` and the
//! `webhook-signature` header `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, so a
//! receiver verifies with that specification's libraries. HMAC-SHA256 is aws-lc-rs's, the
//! cryptography rustls is already built with.

use aws_lc_rs::hmac;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::error::{Error, Result};

/// The prefix of a secret's text.
const PREFIX: &str = "whsec_";
/// Bytes of a generated key.
const GENERATED_BYTES: usize = 32;
/// The key lengths accepted from a caller (the specification's: 24 to 64 bytes).
const KEY_BYTES: std::ops::RangeInclusive<usize> = 24..=64;

/// A webhook's signing secret: its text (`whsec_…`, as given out) and the key it stands for.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    text: String,
    key: Vec<u8>,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(redacted)")
    }
}

impl Secret {
    /// A new secret of 32 random bytes.
    pub fn generate() -> Result<Self> {
        let mut key = vec![0u8; GENERATED_BYTES];
        getrandom::fill(&mut key).map_err(|e| Error::internal(format!("no randomness: {e}")))?;
        Ok(Self { text: format!("{PREFIX}{}", STANDARD.encode(&key)), key })
    }

    /// Reads a secret's text; an error names the `secret` field and what is wrong, without
    /// echoing the secret.
    pub fn parse(text: &str) -> Result<Self> {
        let invalid = |why: &str| {
            Error::invalid(format!(
                "secret must be `whsec_` followed by the base64 of 24 to 64 random bytes \
                 (leave it out to have one generated); {why}"
            ))
        };
        let text = text.trim();
        let encoded = text.strip_prefix(PREFIX).ok_or_else(|| invalid("it lacks the prefix"))?;
        let key = STANDARD.decode(encoded).map_err(|_| invalid("the rest is not base64"))?;
        if !KEY_BYTES.contains(&key.len()) {
            return Err(invalid(&format!("it decodes to {} bytes", key.len())));
        }
        Ok(Self { text: text.to_owned(), key })
    }

    /// The text given out and stored.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The `webhook-signature` header of a request with this id, timestamp (Unix seconds)
    /// and body.
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let key = hmac::Key::new(hmac::HMAC_SHA256, &self.key);
        let mut context = hmac::Context::with_key(&key);
        context.update(id.as_bytes());
        context.update(b".");
        context.update(timestamp.to_string().as_bytes());
        context.update(b".");
        context.update(body);
        format!("v1,{}", STANDARD.encode(context.sign().as_ref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The specification's reference vector (svix-webhooks, `TestWebhookSign`).
    #[test]
    fn signs_the_reference_vector() {
        let secret = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").expect("secret");
        let signature =
            secret.sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1_614_265_330, br#"{"test": 2432232314}"#);
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        // Any other id, time or body signs differently.
        assert_ne!(secret.sign("msg_other", 1_614_265_330, br#"{"test": 2432232314}"#), signature);
        assert_ne!(
            secret.sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1, br#"{"test": 2432232314}"#),
            signature
        );
    }

    #[test]
    fn generated_secrets_read_back_and_differ() {
        let one = Secret::generate().expect("one");
        let two = Secret::generate().expect("two");
        assert_ne!(one, two);
        assert!(one.as_str().starts_with("whsec_"));
        assert_eq!(Secret::parse(one.as_str()).expect("parse"), one);
        assert_eq!(format!("{one:?}"), "Secret(redacted)");
    }

    #[test]
    fn refuses_what_is_not_a_secret() {
        let check = |text: &str, why: &str| {
            let error = Secret::parse(text).expect_err(text);
            assert!(error.message.starts_with("secret must be"), "{}", error.message);
            assert!(error.message.ends_with(why), "{text}: {}", error.message);
        };
        check("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "it lacks the prefix");
        check("whsec_not base64!", "the rest is not base64");
        check("whsec_c2hvcnQ=", "it decodes to 5 bytes");
        check(&format!("whsec_{}", STANDARD.encode([7u8; 65])), "it decodes to 65 bytes");
    }
}
