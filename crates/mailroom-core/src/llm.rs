//! The optional LLM: an OpenAI-compatible chat-completions client (docs/compat/tools.md §7.5,
//! settings: docs/compat/settings.md §8).
//!
//! Off unless `LLM_ENABLED`. It is the only HTTP the core speaks, and it stays inside this
//! module: ops see [`LlmClient::complete_json`] and a plain [`LlmError`], never a transport type.
//! Every caller treats a failure as "no refinement" and keeps its heuristic result, so nothing
//! here retries or waits beyond the configured timeout.
//!
//! The endpoint is `https://` (checked against the system's trust store, or `SSL_CERT_FILE`)
//! or plain `http://` (a local LiteLLM proxy, Ollama or vLLM). Any other scheme leaves the LLM
//! disabled with a warning at start-up rather than failing every call later.

use std::fmt;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::env_value::parse_bool;

/// Model names the reference treats as "a small model of whichever provider is configured";
/// behind an OpenAI-compatible endpoint that is OpenAI's small model.
const SMALL_MODEL_ALIASES: [&str; 4] = ["gpt-5-mini", "gpt5-mini", "gpt-5m", "gpt-4o-mini"];
const SMALL_MODEL: &str = "gpt-4o-mini";

/// LLM settings, read once at start-up from the reference's variable names.
#[derive(Clone)]
pub struct LlmConfig {
    /// `LLM_ENABLED` (default false, as in the reference's code).
    pub enabled: bool,
    /// `LLM_DEFAULT_MODEL` (default `gpt-4o-mini`).
    pub default_model: String,
    /// `LLM_TEMPERATURE` (default 0.2).
    pub temperature: f64,
    /// `LLM_MAX_TOKENS` (default 512).
    pub max_tokens: u32,
    /// `OPENAI_BASE_URL` (or LiteLLM's `OPENAI_API_BASE`): the API root that
    /// `/chat/completions` is appended to.
    pub base_url: String,
    /// `OPENAI_API_KEY`, sent as a bearer token when set.
    pub api_key: Option<String>,
    /// `LLM_TIMEOUT_SECONDS` (a mailroom extra, default 30): the longest one call may take.
    pub timeout: Duration,
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            default_model: SMALL_MODEL.to_string(),
            temperature: 0.2,
            max_tokens: 512,
            base_url: "https://api.openai.com/v1".to_string(),
            api_key: None,
            timeout: Duration::from_secs(30),
        }
    }
}

/// The key is a secret: it never reaches logs through `Debug`.
impl fmt::Debug for LlmConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmConfig")
            .field("enabled", &self.enabled)
            .field("default_model", &self.default_model)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl LlmConfig {
    /// Applies the environment (`lookup`) on top of `self`; invalid values are reported.
    pub fn apply_env(&mut self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
        if let Some(v) = lookup("LLM_ENABLED") {
            self.enabled = parse_bool("LLM_ENABLED", &v)?;
        }
        if let Some(v) = lookup("LLM_DEFAULT_MODEL").filter(|v| !v.trim().is_empty()) {
            self.default_model = v.trim().to_string();
        }
        if let Some(v) = lookup("LLM_TEMPERATURE") {
            self.temperature = v
                .trim()
                .parse()
                .map_err(|_| format!("LLM_TEMPERATURE must be a number, got {v:?}"))?;
        }
        if let Some(v) = lookup("LLM_MAX_TOKENS") {
            self.max_tokens = v
                .trim()
                .parse()
                .map_err(|_| format!("LLM_MAX_TOKENS must be a positive integer, got {v:?}"))?;
        }
        let base = lookup("OPENAI_BASE_URL").or_else(|| lookup("OPENAI_API_BASE"));
        if let Some(v) = base.filter(|v| !v.trim().is_empty()) {
            self.base_url = v.trim().to_string();
        }
        if let Some(v) = lookup("OPENAI_API_KEY").filter(|v| !v.trim().is_empty()) {
            self.api_key = Some(v.trim().to_string());
        }
        if let Some(v) = lookup("LLM_TIMEOUT_SECONDS") {
            let seconds: f64 =
                v.trim().parse().ok().filter(|s: &f64| *s > 0.0).ok_or_else(|| {
                    format!("LLM_TIMEOUT_SECONDS must be a positive number, got {v:?}")
                })?;
            self.timeout = Duration::from_secs_f64(seconds);
        }
        Ok(())
    }
}

/// Why an LLM call gave nothing usable. Callers log it and fall back to their heuristic.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The endpoint could not be reached, or did not answer within the timeout.
    #[error("LLM endpoint unreachable: {0}")]
    Transport(String),
    /// The endpoint answered with an HTTP error status.
    #[error("LLM endpoint answered HTTP {0}")]
    Status(u16),
    /// The answer was not a chat completion, or its text held no JSON object.
    #[error("unusable LLM reply: {0}")]
    Reply(String),
}

/// A configured, enabled LLM endpoint. Cheap to share behind an `Arc`.
pub struct LlmClient {
    http: reqwest::Client,
    endpoint: String,
    config: LlmConfig,
}

impl LlmClient {
    /// The client for `config`, or `None` when the LLM is disabled or cannot work in this build
    /// (the reason is logged once, here).
    pub fn from_config(config: &LlmConfig) -> Option<Self> {
        if !config.enabled {
            return None;
        }
        let base = config.base_url.trim_end_matches('/');
        if !(base.starts_with("https://") || base.starts_with("http://")) {
            tracing::warn!(
                base_url = %config.base_url,
                "LLM disabled: OPENAI_BASE_URL must be an https:// or http:// URL"
            );
            return None;
        }
        match reqwest::Client::builder().timeout(config.timeout).build() {
            Ok(http) => {
                let endpoint = format!("{base}/chat/completions");
                tracing::info!(%endpoint, model = %config.default_model, "LLM summaries enabled");
                Some(Self { http, endpoint, config: config.clone() })
            }
            Err(e) => {
                tracing::warn!(error = %e, "LLM disabled: cannot build the HTTP client");
                None
            }
        }
    }

    /// [`Self::complete_json`] for callers that keep their heuristic result when the LLM fails:
    /// the failure is logged, naming `what`, and yields `None`.
    pub async fn try_complete_json(
        &self,
        what: &str,
        system: &str,
        user: &str,
        model: Option<&str>,
    ) -> Option<Map<String, Value>> {
        match self.complete_json(system, user, model).await {
            Ok(reply) => Some(reply),
            Err(e) => {
                tracing::warn!(error = %e, "LLM {what} failed; heuristic result kept");
                None
            }
        }
    }

    /// The model a call asking for `requested` (or nothing) uses.
    pub fn model_for(&self, requested: Option<&str>) -> String {
        resolve_model(requested, &self.config.default_model)
    }

    /// Asks for one completion and returns the first JSON object found in its text.
    pub async fn complete_json(
        &self,
        system: &str,
        user: &str,
        model: Option<&str>,
    ) -> Result<Map<String, Value>, LlmError> {
        let text = self.complete(system, user, model).await?;
        extract_json_object(&text)
            .ok_or_else(|| LlmError::Reply(format!("no JSON object in {} chars", text.len())))
    }

    /// Asks for one chat completion (system + user message) and returns its text.
    pub async fn complete(
        &self,
        system: &str,
        user: &str,
        model: Option<&str>,
    ) -> Result<String, LlmError> {
        let body = json!({
            "model": self.model_for(model),
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
        });
        let mut request = self.http.post(&self.endpoint).json(&body);
        if let Some(key) = &self.config.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| LlmError::Transport(e.to_string()))?;
        let status = response.status();
        if !status.is_success() {
            return Err(LlmError::Status(status.as_u16()));
        }
        let reply: Value = response.json().await.map_err(|e| LlmError::Reply(e.to_string()))?;
        reply
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| LlmError::Reply("no choices[0].message.content".to_string()))
    }
}

/// The model to ask for: the caller's, else the default; the reference's small-model aliases
/// become OpenAI's small model.
fn resolve_model(requested: Option<&str>, default: &str) -> String {
    let name = requested.map(str::trim).filter(|m| !m.is_empty()).unwrap_or(default);
    if SMALL_MODEL_ALIASES.contains(&name.to_ascii_lowercase().as_str()) {
        SMALL_MODEL.to_string()
    } else {
        name.to_string()
    }
}

/// Finds a JSON object in model output the way the reference does: the whole text, else the
/// first fenced block, else the slice from the first `{` to the last `}`.
pub fn extract_json_object(text: &str) -> Option<Map<String, Value>> {
    let object = |candidate: &str| match serde_json::from_str::<Value>(candidate.trim()) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    };
    object(text).or_else(|| fenced_block(text).and_then(object)).or_else(|| {
        let start = text.find('{')?;
        let end = text.rfind('}')?;
        (end > start).then(|| object(&text[start..=end])).flatten()
    })
}

/// The inside of the first ``` fence (an optional `json` tag after the opening fence dropped).
fn fenced_block(text: &str) -> Option<&str> {
    let (_, after_open) = text.split_once("```")?;
    let inner = after_open.strip_prefix("json").unwrap_or(after_open);
    let (block, _) = inner.split_once("```")?;
    Some(block)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_extract(text: &str, expected: Option<Value>) {
        let got = extract_json_object(text).map(Value::Object);
        assert_eq!(got, expected, "text: {text:?}");
    }

    #[test]
    fn json_is_found_leniently() {
        check_extract(r#"{"a": 1}"#, Some(json!({"a": 1})));
        check_extract("  {\"a\": [1]}\n", Some(json!({"a": [1]})));
        check_extract("Here:\n```json\n{\"k\": \"v\"}\n```\nbye", Some(json!({"k": "v"})));
        check_extract("```\n{\"k\": 2}\n```", Some(json!({"k": 2})));
        check_extract("Ok:\n{\"x\": {\"y\": true}}\nDone.", Some(json!({"x": {"y": true}})));
        check_extract("[1, 2]", None);
        check_extract("no json here", None);
        check_extract("{broken: json}", None);
        check_extract("", None);
    }

    #[test]
    fn models_resolve_aliases_and_defaults() {
        assert_eq!(resolve_model(None, "gpt-4.1"), "gpt-4.1");
        assert_eq!(resolve_model(Some("  "), "gpt-4.1"), "gpt-4.1");
        assert_eq!(resolve_model(Some("llama3"), "gpt-4.1"), "llama3");
        assert_eq!(resolve_model(Some("GPT-5-mini"), "x"), "gpt-4o-mini");
        assert_eq!(resolve_model(None, "gpt5-mini"), "gpt-4o-mini");
    }

    #[test]
    fn env_configures_and_rejects_bad_values() {
        let mut config = LlmConfig::default();
        let env = |name: &str| match name {
            "LLM_ENABLED" => Some("true".to_string()),
            "OPENAI_API_BASE" => Some("http://127.0.0.1:4000/v1".to_string()),
            "OPENAI_API_KEY" => Some("sk-secret".to_string()),
            "LLM_TIMEOUT_SECONDS" => Some("2.5".to_string()),
            _ => None,
        };
        config.apply_env(&env).expect("valid env");
        assert!(config.enabled);
        assert_eq!(config.base_url, "http://127.0.0.1:4000/v1");
        assert_eq!(config.timeout, Duration::from_millis(2500));
        assert!(!format!("{config:?}").contains("sk-secret"), "the key must be redacted");
        let bad = |name: &str| (name == "LLM_MAX_TOKENS").then(|| "lots".to_string());
        assert!(config.apply_env(&bad).is_err());
    }

    #[test]
    fn clients_for_http_and_https_endpoints_only() {
        let mut config = LlmConfig::default();
        assert!(LlmClient::from_config(&config).is_none(), "off by default");
        config.enabled = true;
        let client = LlmClient::from_config(&config).expect("the real API over https");
        assert_eq!(client.endpoint, "https://api.openai.com/v1/chat/completions");
        config.base_url = "ftp://127.0.0.1/v1".to_string();
        assert!(LlmClient::from_config(&config).is_none(), "not an HTTP URL");
        config.base_url = "http://127.0.0.1:1/v1/".to_string();
        let client = LlmClient::from_config(&config).expect("plain http works");
        assert_eq!(client.endpoint, "http://127.0.0.1:1/v1/chat/completions");
    }

    /// A listener that accepts one connection and never answers: the call must give up at
    /// the timeout instead of hanging the summary.
    #[tokio::test]
    async fn a_silent_endpoint_times_out() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        let silent = tokio::spawn(async move {
            // Holding the accepted socket open without writing keeps the client waiting.
            let (_socket, _) = listener.accept().await.expect("accept");
            tokio::time::sleep(Duration::from_secs(10)).await;
        });
        let config = LlmConfig {
            enabled: true,
            base_url: format!("http://{address}/v1"),
            timeout: Duration::from_millis(200),
            ..LlmConfig::default()
        };
        let client = LlmClient::from_config(&config).expect("client");
        let started = std::time::Instant::now();
        let outcome = client.complete("system", "user", None).await;
        assert!(matches!(outcome, Err(LlmError::Transport(_))), "{outcome:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
        silent.abort();
    }
}
