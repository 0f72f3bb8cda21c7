//! The acknowledgement scan: every acknowledgement asked for longer ago than `ACK_TTL_SECONDS`
//! and not given, as the reference logs them (`ack_overdue`), and its escalation
//! (`ACK_ESCALATION_*`, docs/compat/upkeep.md): in `file_reservation` mode, a reservation on the
//! recipient's inbox month, held by the recipient or by a named operations agent.
//!
//! The reference adds a new reservation at every scan while the acknowledgement is missing, so
//! they pile up; here each scan asks again for the same pattern, which refreshes the one
//! reservation the holder already has (`file_reservation_paths`).

use serde::Serialize;

use super::{AckEscalation, EscalationMode};
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::ops::Mailroom;
use crate::ops::agents::Registration;
use crate::ops::conventions::Conventions;
use crate::ops::reservations::ReservePaths;
use crate::records::ReservationId;
use crate::store::db::upkeep::OverdueAck;

/// The reason escalation reservations carry, as the reference's.
pub const ESCALATION_REASON: &str = "ack-overdue";

/// The most overdue acknowledgements one scan reports (the oldest first).
const SCAN_LIMIT: i64 = 1000;

/// What an acknowledgement scan found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AckReport {
    pub ttl_seconds: i64,
    pub overdue: Vec<OverdueAck>,
    /// The reservations escalation made or refreshed (`file_reservation` mode).
    pub escalated: Vec<Escalated>,
    /// Escalations that failed, one line each (the others still ran).
    pub escalation_errors: Vec<String>,
}

/// One overdue acknowledgement escalated to a reservation on the recipient's inbox month.
#[derive(Debug, Clone, Serialize)]
pub struct Escalated {
    pub message_id: crate::records::MessageId,
    pub project_slug: String,
    pub recipient: String,
    pub holder: String,
    pub path_pattern: String,
    pub reservation_id: ReservationId,
    pub exclusive: bool,
    pub expires_ts: Timestamp,
}

impl Mailroom {
    /// Acknowledgements overdue past `ttl_seconds`, each logged as `ack_overdue`.
    pub(super) async fn overdue_acks(&self, ttl_seconds: i64) -> Result<AckReport> {
        let cutoff = Timestamp::now().plus_seconds(-ttl_seconds);
        let overdue = self.store.read(move |db| db.overdue_acks(cutoff, SCAN_LIMIT)).await?;
        for ack in &overdue {
            tracing::warn!(
                event = "ack_overdue",
                project = %ack.project_slug,
                message_id = %ack.message_id,
                recipient = %ack.recipient,
                sender = %ack.sender,
                created_ts = %ack.created_ts.to_iso(),
                "acknowledgement overdue"
            );
        }
        let mut report = AckReport { ttl_seconds, overdue, ..AckReport::default() };
        let escalation = &self.config.upkeep.ack_escalation;
        if escalation.enabled && escalation.mode == EscalationMode::FileReservation {
            for ack in &report.overdue {
                match self.escalate(ack, escalation).await {
                    Ok(escalated) => report.escalated.push(escalated),
                    Err(e) => {
                        tracing::warn!(
                            event = "ack_escalation_failed",
                            message_id = %ack.message_id,
                            recipient = %ack.recipient,
                            error = %e.message,
                            "acknowledgement escalation failed"
                        );
                        report.escalation_errors.push(format!(
                            "message {} to {}: {}",
                            ack.message_id, ack.recipient, e.message
                        ));
                    }
                }
            }
        }
        Ok(report)
    }

    /// Reserves the recipient's inbox month for the holder (made on demand when named).
    async fn escalate(&self, ack: &OverdueAck, escalation: &AckEscalation) -> Result<Escalated> {
        let holder = match &escalation.holder_name {
            Some(name) => {
                self.ensure_escalation_holder(&ack.project_slug, name).await?;
                name.clone()
            }
            None => ack.recipient.clone(),
        };
        let (year, month) = ack.created_ts.year_month();
        let path_pattern = format!("agents/{}/inbox/{year:04}/{month:02}/*.md", ack.recipient);
        let outcome = self
            .file_reservation_paths(ReservePaths {
                project_key: ack.project_slug.clone(),
                agent_name: holder.clone(),
                paths: vec![path_pattern.clone()],
                ttl_seconds: escalation.claim_ttl_seconds,
                exclusive: escalation.claim_exclusive,
                reason: ESCALATION_REASON.to_owned(),
            })
            .await?;
        let granted = outcome.granted.into_iter().next().ok_or_else(|| {
            crate::error::Error::internal(format!("no reservation granted on {path_pattern}"))
        })?;
        tracing::warn!(
            event = "ack_escalated",
            project = %ack.project_slug,
            message_id = %ack.message_id,
            recipient = %ack.recipient,
            holder = %holder,
            path_pattern = %path_pattern,
            reservation_id = %granted.id,
            "overdue acknowledgement escalated to a file reservation"
        );
        Ok(Escalated {
            message_id: ack.message_id,
            project_slug: ack.project_slug.clone(),
            recipient: ack.recipient.clone(),
            holder,
            path_pattern,
            reservation_id: granted.id,
            exclusive: granted.exclusive,
            expires_ts: granted.expires_ts,
        })
    }

    /// The named holder, registered in the project (program `ops`, model `system`) unless
    /// it is there already; its name is taken as given, as the REST routes take one.
    async fn ensure_escalation_holder(&self, project_slug: &str, name: &str) -> Result<()> {
        let (slug, wanted) = (project_slug.to_owned(), name.to_owned());
        let known = self
            .store
            .read(move |db| {
                let project = crate::ops::resolve::project(db, &slug)?;
                Ok(crate::ops::resolve::agent(db, &project, &wanted, "agent_name").is_ok())
            })
            .await?;
        if !known {
            self.register_agent(Registration {
                project_key: project_slug.to_owned(),
                program: "ops".to_owned(),
                model: "system".to_owned(),
                name: Some(name.to_owned()),
                task_description: "Holds reservations for overdue acknowledgements".to_owned(),
                attachments_policy: None,
                conventions: Conventions::Script,
            })
            .await?;
        }
        Ok(())
    }
}
