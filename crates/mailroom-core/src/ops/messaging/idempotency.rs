//! Retry-safe writes (docs/compat/tools.md §4.10). send_message, reply_message and
//! acknowledge_message take an optional `idempotency_key`: a retry with the same key and the
//! same arguments within `IDEMPOTENCY_WINDOW_SECONDS` gets the first call's answer again and
//! stores nothing; the same key with other arguments is refused (`IDEMPOTENCY_KEY_REUSED`).
//!
//! A key belongs to one project, one acting agent and one tool. The look-up, the write and the
//! keeping of its answer run in the write's own store job, on the one writer thread, so two
//! calls racing with one key store one message: the second finds the first's answer.

use serde::ser::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::error::{Category, Error, Result};
use crate::model::sha1::sha1_hex;
use crate::model::time::Timestamp;
use crate::ops::messaging::{ReplyMessage, SendMessage};
use crate::ops::resolve;
use crate::records::{AgentId, ProjectId};
use crate::store::Db;
use crate::store::db::idempotency::{KeptAnswer, KeyScope};

/// The error type of a key used again for a call with other arguments.
pub const IDEMPOTENCY_KEY_REUSED: &str = "IDEMPOTENCY_KEY_REUSED";

/// The longest `idempotency_key`, in bytes.
pub const MAX_IDEMPOTENCY_KEY_BYTES: usize = 128;

/// A keyed write's answer: this call's own, or the first call's under the same key.
#[derive(Debug, Clone)]
pub enum Answer<T> {
    Fresh(T),
    Replayed(ReplayedJson),
}

impl<T> Answer<T> {
    /// The answer of a call made without a key, which is always its own.
    pub(crate) fn into_own(self) -> Result<T> {
        match self {
            Answer::Fresh(answer) => Ok(answer),
            Answer::Replayed(_) => Err(Error::internal("an answer replayed without a key")),
        }
    }
}

impl<T: Serialize> Serialize for Answer<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Answer::Fresh(answer) => answer.serialize(serializer),
            Answer::Replayed(json) => json.text.serialize(serializer),
        }
    }
}

/// A kept answer's JSON text, written again as it is, so a replay over JSON is the first
/// answer's text byte for byte (members in their first order).
#[derive(Debug, Clone)]
pub struct ReplayedJson {
    text: Box<RawValue>,
}

/// One call given a key: the key (checked), its tool and the fingerprint of its arguments.
#[derive(Debug, Clone)]
pub(crate) struct RetryKey {
    tool: &'static str,
    key: String,
    fingerprint: String,
    window_seconds: i64,
}

impl RetryKey {
    /// `None` without a key. `arguments` are the call's arguments other than the key, the
    /// scope and the credentials; a key that is empty, longer than
    /// [`MAX_IDEMPOTENCY_KEY_BYTES`] or holds a control character is refused naming it.
    pub fn new(
        tool: &'static str,
        key: Option<String>,
        arguments: impl FnOnce() -> Value,
        window_seconds: i64,
    ) -> Result<Option<Self>> {
        let Some(key) = key else { return Ok(None) };
        if key.is_empty()
            || key.len() > MAX_IDEMPOTENCY_KEY_BYTES
            || key.chars().any(char::is_control)
        {
            return Err(Error::value_error(format!(
                "idempotency_key must be 1 to {MAX_IDEMPOTENCY_KEY_BYTES} bytes without control \
                 characters; got {} bytes",
                key.len()
            )));
        }
        let fingerprint = sha1_hex(arguments().to_string().as_bytes());
        Ok(Some(Self { tool, key, fingerprint, window_seconds }))
    }

    fn scope(&self, (project_id, agent_id): (ProjectId, AgentId)) -> KeyScope<'_> {
        KeyScope { project_id, agent_id, tool: self.tool, key: &self.key }
    }

    fn reused(&self) -> Error {
        Error::new(
            Category::Conflict,
            IDEMPOTENCY_KEY_REUSED,
            format!(
                "idempotency_key '{}' was already used for a {} call of this agent with other \
                 arguments (keys are kept {} seconds); use a new key for a new call, or repeat \
                 the first call's arguments exactly to get its answer again.",
                self.key, self.tool, self.window_seconds
            ),
        )
    }
}

/// Runs `write` in the caller's store job, once per key: with `retry`, the acting agent's
/// (`scope`) first answer under the key is replayed if it is still within the window and the
/// arguments match, and refused if they do not; otherwise `write` runs and its answer is kept
/// when `keep` says the call stored something. Without a key, `write` just runs.
pub(crate) fn once<T: Serialize>(
    db: &Db<'_>,
    retry: Option<&RetryKey>,
    scope: impl FnOnce() -> Result<(ProjectId, AgentId)>,
    write: impl FnOnce() -> Result<T>,
    keep: impl FnOnce(&T) -> bool,
) -> Result<Answer<T>> {
    let Some(retry) = retry else { return write().map(Answer::Fresh) };
    let scope = scope()?;
    let now = Timestamp::now();
    let cutoff = now.plus_seconds(-retry.window_seconds);
    if let Some(kept) = db.kept_answer(retry.scope(scope))?
        && kept.created_ts >= cutoff
    {
        if kept.fingerprint != retry.fingerprint {
            return Err(retry.reused());
        }
        let text = RawValue::from_string(kept.result_json)
            .map_err(|e| Error::internal(format!("kept answer is not JSON: {e}")))?;
        return Ok(Answer::Replayed(ReplayedJson { text }));
    }
    let answer = write()?;
    if keep(&answer) {
        let result_json = serde_json::to_string(&answer)
            .map_err(|e| Error::internal(format!("cannot encode the answer to keep: {e}")))?;
        let kept =
            KeptAnswer { fingerprint: retry.fingerprint.clone(), result_json, created_ts: now };
        db.keep_answer(retry.scope(scope), &kept)?;
    }
    Ok(Answer::Fresh(answer))
}

impl crate::ops::Mailroom {
    /// Forgets the kept answers older than `IDEMPOTENCY_WINDOW_SECONDS` (the reservation sweep
    /// calls it, so the table shrinks even when keyed writes stop); how many went.
    pub async fn forget_expired_answers(&self) -> Result<usize> {
        let cutoff = Timestamp::now().plus_seconds(-self.config.idempotency_window_seconds);
        self.store.write(move |db| db.forget_answers_before(cutoff)).await
    }
}

/// The acting agent of a keyed call: its project's id and its own.
pub(crate) fn acting_agent(
    db: &Db<'_>,
    project_key: &str,
    name: &str,
    field: &str,
) -> Result<(ProjectId, AgentId)> {
    let project = resolve::project(db, project_key)?;
    let agent = resolve::agent(db, &project, name, field)?;
    Ok((project.id, agent.id))
}

impl SendMessage {
    /// The arguments a retry must repeat: all but the scope (project, sender), the key and
    /// the credentials.
    pub(super) fn retry_arguments(&self) -> Value {
        json!({
            "to": self.to, "cc": self.cc, "bcc": self.bcc, "subject": self.subject,
            "body_md": self.body_md, "importance": self.importance,
            "ack_required": self.ack_required, "thread_id": self.thread_id, "topic": self.topic,
            "broadcast": self.broadcast, "auto_contact_if_blocked": self.auto_contact_if_blocked,
            "attachment_paths": self.attachment_paths, "convert_images": self.convert_images,
        })
    }
}

impl ReplyMessage {
    /// As [`SendMessage::retry_arguments`].
    pub(super) fn retry_arguments(&self) -> Value {
        json!({
            "message_id": self.message_id, "body_md": self.body_md, "to": self.to,
            "cc": self.cc, "bcc": self.bcc, "subject_prefix": self.subject_prefix,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A replayed answer is the kept text byte for byte: members keep their order.
    #[test]
    fn a_replay_writes_the_kept_text_again() {
        let text = r#"{"z":1,"a":[true,null,{"y":"x","b":-2.5}],"m":"é\n"}"#;
        let raw = RawValue::from_string(text.to_string()).expect("parse");
        let answer: Answer<()> = Answer::Replayed(ReplayedJson { text: raw });
        assert_eq!(serde_json::to_string(&answer).expect("encode"), text);
        // Encoded into a tree (the TOON format's way), it is the same value.
        let tree = serde_json::to_value(&answer).expect("a tree");
        assert_eq!(tree, serde_json::from_str::<Value>(text).expect("parse"));
    }

    #[test]
    fn keys_are_bounded() {
        let check = |key: &str| {
            RetryKey::new("send_message", Some(key.to_owned()), || Value::Null, 60)
                .map(|k| k.is_some())
        };
        assert!(check("retry-1").expect("fine"));
        assert!(check(&"k".repeat(MAX_IDEMPOTENCY_KEY_BYTES)).expect("longest"));
        for bad in ["", "a\nb", &"k".repeat(MAX_IDEMPOTENCY_KEY_BYTES + 1)] {
            let err = check(bad).expect_err("refused");
            assert!(err.message.contains("idempotency_key"), "{}", err.message);
        }
    }
}
