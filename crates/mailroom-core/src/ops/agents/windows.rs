//! Window identities (docs/compat/tools.md §3.8, HEAD only): list_window_identities, rename_window,
//! expire_window. A window identity maps a terminal window's UUID (`MCP_AGENT_MAIL_WINDOW_ID`)
//! to a display name in a project, so an agent keeps its name across restarts.

use serde::Serialize;

use crate::error::{Category, Error, Result};
use crate::model::names::{canonical_adjective_noun, sanitize_agent_name};
use crate::model::time::Timestamp;
use crate::ops::{Mailroom, resolve};
use crate::records::ProjectId;
use crate::records::WindowId;
use crate::store::db::windows::WindowIdentity;

/// One live window identity.
#[derive(Debug, Clone, Serialize)]
pub struct WindowOut {
    pub id: WindowId,
    pub window_uuid: String,
    pub display_name: String,
    pub created_ts: Timestamp,
    pub last_active_ts: Timestamp,
    pub expires_ts: Option<Timestamp>,
    pub age_days: i64,
}

/// Result of list_window_identities.
#[derive(Debug, Clone, Serialize)]
pub struct WindowList {
    pub identities: Vec<WindowOut>,
    pub count: usize,
}

/// Result of rename_window.
#[derive(Debug, Clone, Serialize)]
pub struct WindowRenamed {
    pub id: WindowId,
    pub window_uuid: String,
    pub display_name: String,
    pub old_display_name: String,
    pub last_active_ts: Timestamp,
}

/// Result of expire_window.
#[derive(Debug, Clone, Serialize)]
pub struct WindowExpired {
    pub window_uuid: String,
    pub display_name: String,
    pub expired: bool,
    pub expired_at: Timestamp,
}

const MICROS_PER_DAY: i64 = 86_400 * 1_000_000;

impl Mailroom {
    /// The project's window identities that have not expired.
    pub async fn list_window_identities(&self, project_key: String) -> Result<WindowList> {
        self.store
            .read(move |db| {
                let project = resolve::project(db, &project_key)?;
                let now = Timestamp::now();
                let identities: Vec<WindowOut> = db
                    .live_windows(project.id, now)?
                    .into_iter()
                    .map(|w| window_out(w, now))
                    .collect();
                Ok(WindowList { count: identities.len(), identities })
            })
            .await
    }

    /// Gives a live window identity a new adjective+noun display name.
    pub async fn rename_window(
        &self,
        project_key: String,
        window_uuid: String,
        new_display_name: String,
    ) -> Result<WindowRenamed> {
        let uuid = canonical_uuid(&window_uuid)?;
        let name = sanitize_agent_name(&new_display_name)
            .and_then(|n| canonical_adjective_noun(&n))
            .ok_or_else(|| {
                Error::invalid_kind(
                    "INVALID_DISPLAY_NAME",
                    format!(
                        "new_display_name '{new_display_name}' is not a valid adjective+noun \
                         name such as 'BlueLake'."
                    ),
                )
            })?;
        self.store
            .write(move |db| {
                let project = resolve::project(db, &project_key)?;
                let now = Timestamp::now();
                let window = live_window(db, project.id, &uuid, now)?;
                db.rename_window(window.id, &name, now)?;
                Ok(WindowRenamed {
                    id: window.id,
                    window_uuid: window.window_uuid,
                    display_name: name,
                    old_display_name: window.display_name,
                    last_active_ts: now,
                })
            })
            .await
    }

    /// Ends a window identity now; the window gets a fresh identity next time.
    pub async fn expire_window(
        &self,
        project_key: String,
        window_uuid: String,
    ) -> Result<WindowExpired> {
        let uuid = canonical_uuid(&window_uuid)?;
        self.store
            .write(move |db| {
                let project = resolve::project(db, &project_key)?;
                let now = Timestamp::now();
                let window = live_window(db, project.id, &uuid, now)?;
                db.expire_window(window.id, now)?;
                Ok(WindowExpired {
                    window_uuid: window.window_uuid,
                    display_name: window.display_name,
                    expired: true,
                    expired_at: now,
                })
            })
            .await
    }
}

fn live_window(
    db: &crate::store::Db<'_>,
    project_id: ProjectId,
    uuid: &str,
    now: Timestamp,
) -> Result<WindowIdentity> {
    db.live_window(project_id, uuid, now)?.ok_or_else(|| {
        Error::new(
            Category::NotFound,
            "WINDOW_NOT_FOUND",
            format!("No active window identity '{uuid}' in this project."),
        )
    })
}

fn window_out(w: WindowIdentity, now: Timestamp) -> WindowOut {
    let age_days = (now.as_micros() - w.created_ts.as_micros()).max(0) / MICROS_PER_DAY;
    WindowOut {
        id: w.id,
        window_uuid: w.window_uuid,
        display_name: w.display_name,
        created_ts: w.created_ts,
        last_active_ts: w.last_active_ts,
        expires_ts: w.expires_ts,
        age_days,
    }
}

/// The lower-case hyphenated form of a UUID, accepting the spellings Python's `uuid.UUID`
/// accepts (hyphens optional, braces, `urn:uuid:` prefix, any letter case).
pub fn canonical_uuid(raw: &str) -> Result<String> {
    let text = raw.trim();
    let text = text.strip_prefix("urn:uuid:").unwrap_or(text);
    let text = text.strip_prefix('{').and_then(|t| t.strip_suffix('}')).unwrap_or(text);
    let hex: String = text.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(Error::invalid_kind(
            "INVALID_WINDOW_UUID",
            format!(
                "window_uuid '{raw}' is not a UUID (e.g. 123e4567-e89b-12d3-a456-426614174000)."
            ),
        ));
    }
    let hex = hex.to_ascii_lowercase();
    Ok(format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(raw: &str, expected: Option<&str>) {
        assert_eq!(canonical_uuid(raw).ok().as_deref(), expected, "{raw}");
    }

    #[test]
    fn uuids_are_canonicalised_or_refused() {
        let canonical = "123e4567-e89b-12d3-a456-426614174000";
        check(canonical, Some(canonical));
        check("123E4567E89B12D3A456426614174000", Some(canonical));
        check("{123e4567-e89b-12d3-a456-426614174000}", Some(canonical));
        check("urn:uuid:123e4567-e89b-12d3-a456-426614174000", Some(canonical));
        check("123e4567-e89b-12d3-a456-42661417400", None);
        check("not-a-uuid", None);
        check("", None);
    }
}
