//! One attempt of one delivery: its body, its Standard Webhooks headers, the POST, and what
//! the answer means (a 2xx delivers; anything else, a timeout or no connection fails the
//! attempt). Redirects are not followed: a redirect could lead past the URL rules. The URL
//! is checked again before each attempt (the rules may have changed since it was registered),
//! names are resolved by [`PublicResolver`], and no proxy is used: a loopback POST must not
//! leave the machine, nor a proxy reach inside for a receiver.

use serde::Serialize;

use super::endpoint::{self, PublicResolver};
use super::settings::WebhookConfig;
use super::signing::Secret;
use crate::error::{Error, Result};
use crate::model::time::Timestamp;
use crate::store::db::webhooks::{DeliveredMessage, DueDelivery};

/// The `type` of every event so far.
pub const MESSAGE_DELIVERED: &str = "message.delivered";
/// The longest error text kept for a failed attempt.
const MAX_ERROR_CHARS: usize = 300;

/// The HTTP client deliveries are posted with (one, shared: its connections are reused).
#[derive(Clone)]
pub struct Poster {
    client: reqwest::Client,
    timeout_ms: u64,
    allow_private: bool,
}

/// The JSON body of a delivery (docs/compat/tools.md §4.13).
#[derive(Serialize)]
struct Event<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    timestamp: Timestamp,
    data: EventData<'a>,
}

#[derive(Serialize)]
struct EventData<'a> {
    project: &'a str,
    recipient: &'a str,
    recipient_kind: &'a str,
    message: &'a DeliveredMessage,
}

impl Poster {
    /// A client with the configured timeout, no redirects.
    pub fn new(config: &WebhookConfig) -> Result<Self> {
        let client = reqwest::Client::builder()
            .timeout(config.timeout())
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(PublicResolver { allow_private: config.allow_private })
            .user_agent(concat!("mailroom-webhooks/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::internal(format!("webhook client: {e}")))?;
        Ok(Self { client, timeout_ms: config.timeout_ms, allow_private: config.allow_private })
    }

    /// Posts `delivery` of `message` once; `Err` says why the attempt failed.
    pub async fn post(
        &self,
        delivery: &DueDelivery,
        message: &DeliveredMessage,
    ) -> std::result::Result<(), Refusal> {
        endpoint::parse(&delivery.url, self.allow_private).map_err(|e| Refusal::from(e.message))?;
        let secret = Secret::parse(&delivery.secret).map_err(|e| Refusal::from(e.message))?;
        let body = body(delivery, message);
        let timestamp = Timestamp::now().as_micros().div_euclid(1_000_000);
        let signature = secret.sign(&delivery.event_id, timestamp, &body);
        let answer = self
            .client
            .post(&delivery.url)
            .header("content-type", "application/json")
            .header("webhook-id", &delivery.event_id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .body(body)
            .send()
            .await;
        match answer {
            Ok(answer) if answer.status().is_success() => Ok(()),
            Ok(answer) if answer.status().is_redirection() => Err(Refusal::from(format!(
                "HTTP {} (redirects are not followed)",
                answer.status().as_u16()
            ))),
            // 410: the receiver says the endpoint is gone for good; asking again is no use.
            Ok(answer) if answer.status() == reqwest::StatusCode::GONE => Err(Refusal {
                error: "HTTP 410 (the receiver says it is gone: not retried)".to_owned(),
                retry_after: None,
                permanent: true,
            }),
            Ok(answer) => Err(Refusal {
                error: format!("HTTP {}", answer.status().as_u16()),
                retry_after: retry_after(answer.headers()),
                permanent: false,
            }),
            Err(e) if e.is_timeout() => {
                Err(Refusal::from(format!("no answer within {} ms", self.timeout_ms)))
            }
            // Without the URL: it may carry a token, and the error is kept and shown.
            Err(e) => Err(Refusal::from(shortened(&describe(&e.without_url())))),
        }
    }
}

/// Why an attempt failed, and what the receiver asked of the next one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub error: String,
    /// The receiver's `Retry-After` (in seconds), when it gave one.
    pub retry_after: Option<std::time::Duration>,
    /// Not to be tried again (410 Gone).
    pub permanent: bool,
}

impl From<String> for Refusal {
    fn from(error: String) -> Self {
        Self { error, retry_after: None, permanent: false }
    }
}

/// A `Retry-After` header's delay in seconds (the HTTP-date form is not read: the backoff
/// applies then).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<std::time::Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    value.trim().parse::<u64>().ok().map(std::time::Duration::from_secs)
}

/// The body's bytes: the same for every attempt of a delivery.
pub fn body(delivery: &DueDelivery, message: &DeliveredMessage) -> Vec<u8> {
    let event = Event {
        kind: MESSAGE_DELIVERED,
        timestamp: message.created_ts,
        data: EventData {
            project: &delivery.project,
            recipient: &delivery.recipient,
            recipient_kind: &delivery.kind,
            message,
        },
    };
    serde_json::to_vec(&event).unwrap_or_default()
}

/// A request error with its causes (reqwest's own text says only "error sending request").
fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn shortened(text: &str) -> String {
    text.chars().take(MAX_ERROR_CHARS).collect()
}
