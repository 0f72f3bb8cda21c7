//! Background upkeep (the reference's HTTP workers, docs/compat/upkeep.md): retiring agents
//! idle past a threshold, sweeping expired and stale file reservations, and scanning for
//! acknowledgements overdue. Each task is one call here; the server runs them on their
//! schedules off the request path, and the `run_upkeep` tool and `mailroom upkeep` run them
//! on demand.

mod acks;
mod fds;
mod retention;
mod retire;

use serde::Serialize;

use crate::config::parse_bool;
use crate::error::Result;
use crate::ops::Mailroom;

pub use acks::{AckReport, ESCALATION_REASON, Escalated};
pub use fds::FdReport;
pub use retention::{ProjectRetention, RetentionReport};
pub use retire::{RetireReport, Seen};

/// One upkeep task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Task {
    /// Retire agents idle past `AUTO_RETIRE_STALE_AGENTS_THRESHOLD_SECONDS`.
    Retire,
    /// Release expired reservations and those whose holders went quiet, in every project;
    /// prune mailbox events past `MAILBOX_EVENTS_RETENTION_DAYS`, forget expired idempotency
    /// answers and webhook deliveries finished past `WEBHOOK_RETENTION_DAYS`.
    Reservations,
    /// Report acknowledgements overdue past `ACK_TTL_SECONDS`.
    Acks,
    /// Report old message files, inbox sizes and attachment bytes; warn over quota.
    Retention,
    /// Check the open file descriptors against the limit.
    Fds,
}

impl Task {
    pub const ALL: [Task; 5] =
        [Task::Retire, Task::Reservations, Task::Acks, Task::Retention, Task::Fds];

    /// Its name in the tool, the command and the logs.
    pub fn name(self) -> &'static str {
        match self {
            Task::Retire => "retire",
            Task::Reservations => "reservations",
            Task::Acks => "acks",
            Task::Retention => "retention",
            Task::Fds => "fds",
        }
    }

    /// The task a name means.
    pub fn parse(name: &str) -> Option<Task> {
        Task::ALL.into_iter().find(|t| t.name() == name.trim().to_ascii_lowercase())
    }
}

/// When and how each task runs (the reference's variables and defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpkeepConfig {
    /// `AUTO_RETIRE_STALE_AGENTS_ENABLED` (true).
    pub retire_enabled: bool,
    /// `AUTO_RETIRE_STALE_AGENTS_INTERVAL_SECONDS` (3600, at least 60).
    pub retire_interval_seconds: u64,
    /// `AUTO_RETIRE_STALE_AGENTS_THRESHOLD_SECONDS` (86400, at least 60).
    pub retire_threshold_seconds: i64,
    /// `FILE_RESERVATIONS_CLEANUP_ENABLED` (true).
    pub reservations_enabled: bool,
    /// `FILE_RESERVATIONS_CLEANUP_INTERVAL_SECONDS` (60, at least 1).
    pub reservations_interval_seconds: u64,
    /// `MAILBOX_EVENTS_RETENTION_DAYS` (30, at least 1): fetch_inbox_events' log keeps
    /// events this long; the reservation sweep prunes older ones.
    pub mailbox_events_retention_days: i64,
    /// `ACK_TTL_ENABLED` (false).
    pub acks_enabled: bool,
    /// `ACK_TTL_SCAN_INTERVAL_SECONDS` (60, at least 1).
    pub acks_interval_seconds: u64,
    /// `ACK_TTL_SECONDS` (1800): an acknowledgement is overdue this long after the message.
    pub ack_ttl_seconds: i64,
    /// `ACK_ESCALATION_*`: what the scan does beyond logging.
    pub ack_escalation: AckEscalation,
    /// `RETENTION_REPORT_ENABLED` (false).
    pub retention_enabled: bool,
    /// `RETENTION_REPORT_INTERVAL_SECONDS` (3600, at least 60).
    pub retention_interval_seconds: u64,
    /// `RETENTION_MAX_AGE_DAYS` (180): message files older than this count as old.
    pub retention_max_age_days: i64,
    /// `QUOTA_ENABLED` (false): the report also runs, and warns over the limits.
    pub quota_enabled: bool,
    /// `QUOTA_ATTACHMENTS_LIMIT_BYTES` (0: none), per project.
    pub quota_attachments_limit_bytes: u64,
    /// `QUOTA_INBOX_LIMIT_COUNT` (0: none), per agent.
    pub quota_inbox_limit_count: usize,
    /// How often the file-descriptor headroom is checked (always on, as the reference's: 30 s).
    pub fds_interval_seconds: u64,
}

impl Default for UpkeepConfig {
    fn default() -> Self {
        Self {
            retire_enabled: true,
            retire_interval_seconds: 3600,
            retire_threshold_seconds: 86_400,
            reservations_enabled: true,
            reservations_interval_seconds: 60,
            mailbox_events_retention_days: 30,
            acks_enabled: false,
            acks_interval_seconds: 60,
            ack_ttl_seconds: 1800,
            ack_escalation: AckEscalation::default(),
            retention_enabled: false,
            retention_interval_seconds: 3600,
            retention_max_age_days: 180,
            quota_enabled: false,
            quota_attachments_limit_bytes: 0,
            quota_inbox_limit_count: 0,
            fds_interval_seconds: 30,
        }
    }
}

impl UpkeepConfig {
    /// Reads the variables over `self`; a value that does not parse is an error naming it.
    pub fn apply_env(&mut self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
        let flag =
            |name: &str, current: bool| lookup(name).map_or(Ok(current), |v| parse_bool(name, &v));
        let seconds = |name: &str, current: i64, least: i64| -> Result<i64, String> {
            let value = match lookup(name) {
                Some(v) => v
                    .trim()
                    .parse::<i64>()
                    .map_err(|_| format!("{name} must be a number of seconds, got {v:?}"))?,
                None => current,
            };
            let most = crate::model::bounds::MAX_DURATION_SECONDS;
            if value > most {
                return Err(format!(
                    "{name} must be at most {most} seconds (ten years), got {value}"
                ));
            }
            Ok(value.max(least))
        };
        let interval = |name: &str, current: u64, least: i64| -> Result<u64, String> {
            let value = seconds(name, i64::try_from(current).unwrap_or(i64::MAX), least)?;
            Ok(u64::try_from(value).unwrap_or(1))
        };
        self.retire_enabled = flag("AUTO_RETIRE_STALE_AGENTS_ENABLED", self.retire_enabled)?;
        self.retire_interval_seconds = interval(
            "AUTO_RETIRE_STALE_AGENTS_INTERVAL_SECONDS",
            self.retire_interval_seconds,
            60,
        )?;
        self.retire_threshold_seconds = seconds(
            "AUTO_RETIRE_STALE_AGENTS_THRESHOLD_SECONDS",
            self.retire_threshold_seconds,
            60,
        )?;
        self.reservations_enabled =
            flag("FILE_RESERVATIONS_CLEANUP_ENABLED", self.reservations_enabled)?;
        self.reservations_interval_seconds = interval(
            "FILE_RESERVATIONS_CLEANUP_INTERVAL_SECONDS",
            self.reservations_interval_seconds,
            1,
        )?;
        if let Some(v) = lookup("MAILBOX_EVENTS_RETENTION_DAYS") {
            let days = v.trim().parse::<i64>().ok().filter(|d| (1..=3650).contains(d));
            self.mailbox_events_retention_days = days.ok_or_else(|| {
                format!("MAILBOX_EVENTS_RETENTION_DAYS must be a number of days from 1 to 3650, got {v:?}")
            })?;
        }
        self.acks_enabled = flag("ACK_TTL_ENABLED", self.acks_enabled)?;
        self.acks_interval_seconds =
            interval("ACK_TTL_SCAN_INTERVAL_SECONDS", self.acks_interval_seconds, 1)?;
        self.ack_ttl_seconds = seconds("ACK_TTL_SECONDS", self.ack_ttl_seconds, 0)?;
        let escalation = &mut self.ack_escalation;
        escalation.enabled = flag("ACK_ESCALATION_ENABLED", escalation.enabled)?;
        if let Some(mode) = lookup("ACK_ESCALATION_MODE") {
            escalation.mode = EscalationMode::parse(&mode)?;
        }
        escalation.claim_ttl_seconds =
            seconds("ACK_ESCALATION_CLAIM_TTL_SECONDS", escalation.claim_ttl_seconds, 1)?;
        escalation.claim_exclusive =
            flag("ACK_ESCALATION_CLAIM_EXCLUSIVE", escalation.claim_exclusive)?;
        if let Some(name) = lookup("ACK_ESCALATION_CLAIM_HOLDER_NAME") {
            escalation.holder_name = Some(name.trim().to_owned()).filter(|n| !n.is_empty());
        }
        self.retention_enabled = flag("RETENTION_REPORT_ENABLED", self.retention_enabled)?;
        self.retention_interval_seconds =
            interval("RETENTION_REPORT_INTERVAL_SECONDS", self.retention_interval_seconds, 60)?;
        self.retention_max_age_days =
            seconds("RETENTION_MAX_AGE_DAYS", self.retention_max_age_days, 0)?;
        self.quota_enabled = flag("QUOTA_ENABLED", self.quota_enabled)?;
        let limit = |name: &str, current: u64| -> Result<u64, String> {
            lookup(name).map_or(Ok(current), |v| {
                v.trim().parse().map_err(|_| format!("{name} must be a whole number, got {v:?}"))
            })
        };
        self.quota_attachments_limit_bytes =
            limit("QUOTA_ATTACHMENTS_LIMIT_BYTES", self.quota_attachments_limit_bytes)?;
        self.quota_inbox_limit_count =
            usize::try_from(limit("QUOTA_INBOX_LIMIT_COUNT", self.quota_inbox_limit_count as u64)?)
                .unwrap_or(usize::MAX);
        Ok(())
    }

    /// Whether `task` runs on its own schedule, and how often (seconds).
    pub fn schedule(&self, task: Task) -> Option<u64> {
        match task {
            Task::Retire => self.retire_enabled.then_some(self.retire_interval_seconds),
            Task::Reservations => {
                self.reservations_enabled.then_some(self.reservations_interval_seconds)
            }
            Task::Acks => self.acks_enabled.then_some(self.acks_interval_seconds),
            Task::Retention => (self.retention_enabled || self.quota_enabled)
                .then_some(self.retention_interval_seconds),
            Task::Fds => Some(self.fds_interval_seconds),
        }
    }
}

/// `ACK_ESCALATION_*` (the reference's defaults: off, `log`, 3600, not exclusive, no holder).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckEscalation {
    /// `ACK_ESCALATION_ENABLED` (false).
    pub enabled: bool,
    /// `ACK_ESCALATION_MODE` (`log`).
    pub mode: EscalationMode,
    /// `ACK_ESCALATION_CLAIM_TTL_SECONDS` (3600).
    pub claim_ttl_seconds: i64,
    /// `ACK_ESCALATION_CLAIM_EXCLUSIVE` (false). Exclusive, it refuses other senders'
    /// deliveries into that inbox month (the reservation covers a mail-archive path).
    pub claim_exclusive: bool,
    /// `ACK_ESCALATION_CLAIM_HOLDER_NAME` (none: the recipient holds it).
    pub holder_name: Option<String>,
}

impl Default for AckEscalation {
    fn default() -> Self {
        Self {
            enabled: false,
            mode: EscalationMode::Log,
            claim_ttl_seconds: 3600,
            claim_exclusive: false,
            holder_name: None,
        }
    }
}

/// `ACK_ESCALATION_MODE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EscalationMode {
    /// The scan's log lines only.
    Log,
    /// A reservation on the recipient's inbox month.
    FileReservation,
}

impl EscalationMode {
    fn parse(value: &str) -> Result<Self, String> {
        match value.trim().to_ascii_lowercase().as_str() {
            "log" => Ok(Self::Log),
            "file_reservation" => Ok(Self::FileReservation),
            _ => Err(format!("ACK_ESCALATION_MODE must be log or file_reservation, got {value:?}")),
        }
    }
}

/// What one run of the reservation sweep did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SweepReport {
    /// Projects whose reservations were swept.
    pub projects: usize,
    /// Reservations released (expired, or held by agents gone quiet).
    pub released: usize,
    /// Mailbox events pruned past `MAILBOX_EVENTS_RETENTION_DAYS` (fetch_inbox_events).
    pub mailbox_events_pruned: usize,
    /// Answers kept for `idempotency_key` retries forgotten past `IDEMPOTENCY_WINDOW_SECONDS`.
    pub idempotency_answers_forgotten: usize,
    /// Delivered and failed webhook deliveries forgotten past `WEBHOOK_RETENTION_DAYS`.
    pub webhook_deliveries_forgotten: usize,
}

/// What one run of a task did.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "task", rename_all = "snake_case")]
pub enum UpkeepReport {
    Retire(RetireReport),
    Reservations(SweepReport),
    Acks(AckReport),
    Retention(RetentionReport),
    Fds(FdReport),
}

impl UpkeepReport {
    /// How many things the run changed or found (agents retired, reservations released,
    /// acknowledgements overdue), for logs and metrics.
    pub fn count(&self) -> usize {
        match self {
            UpkeepReport::Retire(r) => r.retired.len(),
            UpkeepReport::Reservations(r) => r.released,
            UpkeepReport::Acks(r) => r.overdue.len(),
            UpkeepReport::Retention(r) => r.projects.iter().map(|p| p.over_quota.len()).sum(),
            UpkeepReport::Fds(r) => usize::try_from(r.open).unwrap_or(usize::MAX),
        }
    }
}

impl Mailroom {
    /// Runs one upkeep task now. `seen` is the activity the caller saw beyond the database's
    /// (the server's record of tool calls) and only matters to [`Task::Retire`].
    pub async fn run_upkeep(&self, task: Task, seen: &Seen) -> Result<UpkeepReport> {
        let settings = self.config.upkeep.clone();
        Ok(match task {
            Task::Retire => UpkeepReport::Retire(
                self.retire_idle_agents(settings.retire_threshold_seconds, seen).await?,
            ),
            Task::Reservations => {
                let mut report = self.sweep_all_reservations().await?;
                report.mailbox_events_pruned =
                    self.prune_mailbox_events(settings.mailbox_events_retention_days).await?;
                report.idempotency_answers_forgotten = self.forget_expired_answers().await?;
                report.webhook_deliveries_forgotten =
                    self.forget_old_webhook_deliveries(self.config.webhooks.retention_days).await?;
                UpkeepReport::Reservations(report)
            }
            Task::Acks => UpkeepReport::Acks(self.overdue_acks(settings.ack_ttl_seconds).await?),
            Task::Retention => UpkeepReport::Retention(self.retention_report().await?),
            Task::Fds => UpkeepReport::Fds(fds::check()?),
        })
    }

    /// Releases expired and stale reservations in every project that holds any.
    async fn sweep_all_reservations(&self) -> Result<SweepReport> {
        let projects = self.store.read(|db| db.projects_with_open_reservations()).await?;
        let mut report = SweepReport { projects: projects.len(), ..SweepReport::default() };
        for slug in projects {
            // One project's failure is logged; the others are still swept.
            match self.sweep_reservations(slug.clone()).await {
                Ok(released) => report.released += released,
                Err(e) => {
                    tracing::warn!(project = %slug, error = %e.message, "reservation sweep failed")
                }
            }
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::CoreConfig;
    use crate::model::time::Timestamp;
    use crate::ops::agents::Registration;
    use crate::ops::messaging::SendMessage;

    const PROJECT: &str = "/work/upkeep";

    async fn open(dir: &std::path::Path) -> Mailroom {
        let mut config = CoreConfig::for_data_dir(dir);
        config.archive.enabled = false;
        config.contact_enforcement_enabled = false;
        let core = Mailroom::open(config).expect("open");
        core.ensure_project(PROJECT).await.expect("project");
        for name in ["GreenCastle", "BlueLake", "RedStone", "SilentFox"] {
            let registration = Registration {
                project_key: PROJECT.into(),
                program: "test".into(),
                model: "test".into(),
                name: Some(name.into()),
                ..Registration::default()
            };
            core.register_agent(registration).await.expect("register");
        }
        core
    }

    /// Moves an agent's last activity `seconds` into the past.
    async fn idle_for(core: &Mailroom, name: &'static str, seconds: i64) {
        let at = Timestamp::now().plus_seconds(-seconds);
        core.store
            .write(move |db| {
                let project = crate::ops::resolve::project(db, PROJECT)?;
                let agent = db.agent_by_name(project.id, name)?.expect("agent");
                db.touch_agent(agent.id, at)
            })
            .await
            .expect("touch");
    }

    async fn retired(core: &Mailroom, name: &'static str) -> bool {
        core.store
            .read(move |db| {
                let project = crate::ops::resolve::project(db, PROJECT)?;
                Ok(db.agent_by_name(project.id, name)?.expect("agent").retired_at.is_some())
            })
            .await
            .expect("read")
    }

    #[tokio::test]
    async fn idle_agents_retire_and_busy_ones_stay() {
        let dir = tempfile::tempdir().expect("temp dir");
        let core = open(dir.path()).await;
        for name in ["GreenCastle", "BlueLake", "RedStone"] {
            idle_for(&core, name, 7200).await;
        }
        // The sender sends (which the database records); the orchestrator only reads, which
        // the server saw as tool calls.
        let send = SendMessage {
            project_key: PROJECT.into(),
            sender_name: "BlueLake".into(),
            to: vec!["SilentFox".into()],
            subject: "still here".into(),
            body_md: "working".into(),
            ..SendMessage::default()
        };
        core.send_message(send).await.expect("send");
        let mut seen = Seen::default();
        seen.note(PROJECT, "greencastle", Timestamp::now());
        seen.note("elsewhere", "RedStone", Timestamp::now());

        let report = core.retire_idle_agents(3600, &seen).await.expect("retire");
        let names: Vec<_> = report.retired.iter().map(|r| r.agent.as_str()).collect();
        assert_eq!(names, ["RedStone"], "{report:?}");
        assert_eq!(report.kept_busy, 1, "the orchestrator, seen reading");
        assert!(retired(&core, "RedStone").await);
        for name in ["GreenCastle", "BlueLake", "SilentFox"] {
            assert!(!retired(&core, name).await, "{name}");
        }
        // A second run finds nobody new.
        let again = core.retire_idle_agents(3600, &seen).await.expect("retire");
        assert!(again.retired.is_empty());
    }

    #[tokio::test]
    async fn overdue_acknowledgements_are_found_once_each() {
        let dir = tempfile::tempdir().expect("temp dir");
        let core = open(dir.path()).await;
        let send = SendMessage {
            project_key: PROJECT.into(),
            sender_name: "BlueLake".into(),
            to: vec!["SilentFox".into(), "RedStone".into()],
            subject: "sign off".into(),
            body_md: "please ack".into(),
            ack_required: true,
            ..SendMessage::default()
        };
        core.send_message(send).await.expect("send");
        let none = core.overdue_acks(60).await.expect("scan");
        assert!(none.overdue.is_empty(), "not overdue yet");
        let all = core.overdue_acks(-60).await.expect("scan");
        let recipients: Vec<_> = all.overdue.iter().map(|a| a.recipient.as_str()).collect();
        assert_eq!(recipients, ["RedStone", "SilentFox"], "oldest first, then by name");
        assert_eq!(all.overdue[0].subject, "sign off");
    }

    #[test]
    fn settings_have_the_references_defaults_and_floors() {
        let mut config = UpkeepConfig::default();
        assert_eq!(config.schedule(Task::Retire), Some(3600));
        assert_eq!(config.schedule(Task::Acks), None);
        let vars = [
            ("AUTO_RETIRE_STALE_AGENTS_INTERVAL_SECONDS", "5"),
            ("AUTO_RETIRE_STALE_AGENTS_THRESHOLD_SECONDS", "10"),
            ("ACK_TTL_ENABLED", "yes"),
        ];
        config
            .apply_env(&|name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))
            .expect("apply");
        assert_eq!((config.retire_interval_seconds, config.retire_threshold_seconds), (60, 60));
        assert_eq!(config.schedule(Task::Acks), Some(60));
        let bad = UpkeepConfig::default()
            .apply_env(&|name| (name == "ACK_TTL_SECONDS").then(|| "soon".to_string()));
        assert!(bad.expect_err("refused").contains("ACK_TTL_SECONDS"));
    }
}
