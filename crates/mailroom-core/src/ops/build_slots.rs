//! Build slots (docs/compat/tools.md §10): advisory, coarse leases on named slots such as
//! `frontend-build`, held per agent and branch, kept as JSON files under the archive root
//! (`archive::build_slots`), never in the database.
//!
//! Acquiring is never refused: the lease is (re)written and the conflicting active leases are
//! returned beside it. An exclusive request conflicts with every other active holder; a shared
//! one only with exclusive holders. Releasing keeps the file, stamped with `released_ts`.

use std::path::PathBuf;
use std::sync::Arc;

use mailroom_git::current_branch;
use serde::{Deserialize, Serialize};

use super::{Mailroom, resolve};
use crate::archive::build_slots::{read_leases, safe_component, slot_dir, write_lease};
use crate::error::{Error, Result};
use crate::model::bounds;
use crate::model::time::Timestamp;

/// Shortest TTL or extension, in seconds (the reference's floor).
const MIN_SECONDS: i64 = 60;

/// One holder's lease, as stored in its file and returned by acquire_build_slot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lease {
    pub slot: String,
    pub agent: String,
    pub branch: Option<String>,
    pub exclusive: bool,
    pub acquired_ts: Timestamp,
    pub expires_ts: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub released_ts: Option<Timestamp>,
}

/// The file form: timestamps as the reference's ISO text.
#[derive(Deserialize)]
struct StoredLease {
    slot: String,
    agent: String,
    branch: Option<String>,
    #[serde(default)]
    exclusive: bool,
    acquired_ts: String,
    expires_ts: String,
    #[serde(default)]
    released_ts: Option<String>,
}

impl Lease {
    fn parse(bytes: &[u8]) -> Option<Self> {
        let stored: StoredLease = serde_json::from_slice(bytes).ok()?;
        Some(Self {
            slot: stored.slot,
            agent: stored.agent,
            branch: stored.branch,
            exclusive: stored.exclusive,
            acquired_ts: Timestamp::parse_iso(&stored.acquired_ts)?,
            expires_ts: Timestamp::parse_iso(&stored.expires_ts)?,
            released_ts: match stored.released_ts {
                Some(text) => Some(Timestamp::parse_iso(&text)?),
                None => None,
            },
        })
    }

    /// Neither released nor expired at `now`.
    pub fn is_active(&self, now: Timestamp) -> bool {
        self.released_ts.is_none() && self.expires_ts > now
    }

    fn held_by(&self, agent: &str, branch: Option<&str>) -> bool {
        self.agent == agent && self.branch.as_deref() == branch
    }
}

/// Who asks for a slot, and for how long.
#[derive(Debug, Clone)]
pub struct SlotRequest {
    pub project_key: String,
    pub agent_name: String,
    pub slot: String,
    /// `None`: the branch checked out at the project's path, if any.
    pub branch: Option<String>,
    /// TTL (acquire) or extension (renew), in seconds; raised to 60.
    pub seconds: i64,
    pub exclusive: bool,
}

/// Result of acquire_build_slot.
#[derive(Debug, Clone, Serialize)]
pub struct SlotGrant {
    pub granted: Lease,
    pub conflicts: Vec<Lease>,
}

/// Result of renew_build_slot.
#[derive(Debug, Clone, Serialize)]
pub struct SlotRenewal {
    pub renewed: bool,
    pub expires_ts: Option<Timestamp>,
}

/// Result of release_build_slot.
#[derive(Debug, Clone, Serialize)]
pub struct SlotRelease {
    pub released: bool,
    pub released_at: Timestamp,
}

/// Where a request's lease files live and whose lease is its own.
struct Holder {
    dir: PathBuf,
    file: String,
    agent: String,
    branch: Option<String>,
    slot: String,
}

/// The active leases that conflict with `agent`/`branch` asking (exclusively or not).
pub fn conflicts(
    leases: &[Lease],
    agent: &str,
    branch: Option<&str>,
    exclusive: bool,
    now: Timestamp,
) -> Vec<Lease> {
    leases
        .iter()
        .filter(|l| l.is_active(now) && !l.held_by(agent, branch) && (exclusive || l.exclusive))
        .cloned()
        .collect()
}

impl Mailroom {
    /// Takes (or refreshes) the caller's lease on a slot; conflicts are reported, not refused.
    pub async fn acquire_build_slot(&self, req: SlotRequest) -> Result<SlotGrant> {
        self.with_slot(req, |holder, leases, req, now| {
            let own = leases.iter().find(|(file, l)| *file == holder.file && l.is_active(now));
            let ttl = bounds::seconds("ttl_seconds", req.seconds.max(MIN_SECONDS), MIN_SECONDS)?;
            let expires = bounds::later("ttl_seconds", now, ttl)?;
            let granted = Lease {
                slot: holder.slot.clone(),
                agent: holder.agent.clone(),
                branch: holder.branch.clone(),
                exclusive: req.exclusive,
                acquired_ts: own.map_or(now, |(_, l)| l.acquired_ts),
                expires_ts: own.map_or(expires, |(_, l)| l.expires_ts.max(expires)),
                released_ts: None,
            };
            let others: Vec<Lease> = leases.into_iter().map(|(_, l)| l).collect();
            let conflicts =
                conflicts(&others, &holder.agent, holder.branch.as_deref(), req.exclusive, now);
            store(holder, &granted)?;
            Ok(SlotGrant { granted, conflicts })
        })
        .await
    }

    /// Extends the caller's active lease by `seconds` (at least 60) from now or its expiry,
    /// whichever is later.
    pub async fn renew_build_slot(&self, req: SlotRequest) -> Result<SlotRenewal> {
        self.with_slot(req, |holder, leases, req, now| {
            let Some(mut lease) = own_active(holder, leases, now) else {
                return Ok(SlotRenewal { renewed: false, expires_ts: None });
            };
            let extension =
                bounds::seconds("extend_seconds", req.seconds.max(MIN_SECONDS), MIN_SECONDS)?;
            lease.expires_ts =
                bounds::later("extend_seconds", lease.expires_ts.max(now), extension)?;
            store(holder, &lease)?;
            Ok(SlotRenewal { renewed: true, expires_ts: Some(lease.expires_ts) })
        })
        .await
    }

    /// Ends the caller's active lease now, keeping its file stamped with `released_ts`.
    pub async fn release_build_slot(&self, req: SlotRequest) -> Result<SlotRelease> {
        self.with_slot(req, |holder, leases, _req, now| {
            let Some(mut lease) = own_active(holder, leases, now) else {
                return Ok(SlotRelease { released: false, released_at: now });
            };
            lease.released_ts = Some(now);
            lease.expires_ts = now;
            store(holder, &lease)?;
            Ok(SlotRelease { released: true, released_at: now })
        })
        .await
    }

    /// Validates the request, resolves the project, then runs `step` on a blocking thread
    /// with the slot's current leases, under the build-slot lock (so two requests never
    /// decide on the same stale view).
    async fn with_slot<R, F>(&self, req: SlotRequest, step: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&Holder, Vec<(String, Lease)>, &SlotRequest, Timestamp) -> Result<R>
            + Send
            + 'static,
    {
        let agent = req.agent_name.trim().to_string();
        if agent.is_empty() {
            return Err(Error::invalid("agent_name must not be empty."));
        }
        let slot = slot_name(&req.slot)?;
        let key = req.project_key.clone();
        let project = self.store.read(move |db| resolve::project(db, &key)).await?;
        let root = self.config.storage_root.clone();
        let lock = Arc::clone(&self.build_slots_lock);
        let work = move || {
            let branch = match req.branch.as_deref().map(str::trim).filter(|b| !b.is_empty()) {
                Some(branch) => Some(branch.to_string()),
                None => current_branch(std::path::Path::new(&project.human_key)),
            };
            let holder = Holder {
                dir: slot_dir(&root, &project.slug, &slot),
                file: safe_component(&format!(
                    "{agent}__{}",
                    branch.as_deref().unwrap_or("unknown")
                )),
                agent,
                branch,
                slot,
            };
            let _guard = lock.lock().map_err(|_| Error::internal("build-slot lock poisoned"))?;
            let leases = read_leases(&holder.dir)?
                .into_iter()
                .filter_map(|(file, bytes)| Lease::parse(&bytes).map(|l| (file, l)))
                .collect();
            step(&holder, leases, &req, Timestamp::now())
        };
        tokio::task::spawn_blocking(work)
            .await
            .map_err(|e| Error::internal(format!("build-slot task failed: {e}")))?
    }
}

fn own_active(holder: &Holder, leases: Vec<(String, Lease)>, now: Timestamp) -> Option<Lease> {
    leases.into_iter().find(|(file, l)| *file == holder.file && l.is_active(now)).map(|(_, l)| l)
}

fn store(holder: &Holder, lease: &Lease) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(lease)
        .map_err(|e| Error::internal(format!("cannot encode lease: {e}")))?;
    write_lease(&holder.dir, &holder.file, &bytes)
}

/// The slot as a directory name: trimmed, unsafe characters replaced, never `.`/`..`.
fn slot_name(raw: &str) -> Result<String> {
    let slot = safe_component(raw.trim());
    if slot.is_empty() || slot.chars().all(|c| c == '.') {
        return Err(Error::invalid(format!(
            "slot '{raw}' is not a usable slot name; use a short name such as 'frontend-build'."
        )));
    }
    Ok(slot)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(agent: &str, branch: Option<&str>, exclusive: bool, expires_in: i64) -> Lease {
        let now = Timestamp::from_micros(1_000_000_000_000);
        Lease {
            slot: "build".to_string(),
            agent: agent.to_string(),
            branch: branch.map(str::to_string),
            exclusive,
            acquired_ts: now,
            expires_ts: now.plus_seconds(expires_in),
            released_ts: None,
        }
    }

    fn names(found: Vec<Lease>) -> Vec<String> {
        found.into_iter().map(|l| format!("{}@{}", l.agent, l.branch.unwrap_or_default())).collect()
    }

    #[test]
    fn exclusive_conflicts_with_all_active_others_and_shared_only_with_exclusive() {
        let now = Timestamp::from_micros(1_000_000_000_000);
        let mut released = lease("Gone", None, true, 600);
        released.released_ts = Some(now);
        let leases = vec![
            lease("Blue", Some("main"), true, 600),
            lease("Green", Some("main"), false, 600),
            lease("Old", Some("main"), true, -1),
            released,
            lease("Me", Some("main"), true, 600),
            lease("Me", Some("other"), false, 600),
        ];
        let check = |exclusive: bool, expected: &[&str]| {
            assert_eq!(names(conflicts(&leases, "Me", Some("main"), exclusive, now)), expected);
        };
        check(true, &["Blue@main", "Green@main", "Me@other"]);
        check(false, &["Blue@main"]);
    }

    #[test]
    fn stored_leases_parse_back() {
        let original = lease("Blue", None, true, 600);
        let bytes = serde_json::to_vec(&original).expect("encode");
        assert_eq!(Lease::parse(&bytes), Some(original));
        assert_eq!(Lease::parse(b"{\"slot\":\"x\"}"), None);
    }

    #[test]
    fn slot_names_are_single_safe_components() {
        assert_eq!(slot_name(" frontend build ").as_deref(), Ok("frontend_build"));
        assert_eq!(slot_name("a/b").as_deref(), Ok("a_b"));
        assert!(slot_name("..").is_err());
        assert!(slot_name("  ").is_err());
    }
}
