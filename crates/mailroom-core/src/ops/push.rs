//! What the server pushes to subscribed clients: which messages committed since it last
//! looked (`store/db/push.rs`), and what a subscription to an agent's mailbox resolves to.
//! The server decides who is told (`mailroom-server` `mcp/subscriptions.rs`).

pub use crate::store::db::push::{Committed, ReservationMark};

use crate::error::Result;
use crate::model::time::Timestamp;
use crate::ops::{Mailroom, resolve};

/// The most messages one look reads; a burst beyond it is read in several looks.
pub const LOOK_LIMIT: usize = 4096;

impl Mailroom {
    /// The highest message id committed so far (0 before the first): where looking starts.
    pub async fn last_message_id(&self) -> Result<i64> {
        self.store.read_short(|db| db.last_message_id()).await
    }

    /// The messages committed after `after`, oldest first, with their recipients; at most a
    /// few thousand per call (call again from the last id for more).
    pub async fn messages_after(&self, after: i64) -> Result<Vec<Committed>> {
        let limit = i64::try_from(LOOK_LIMIT).unwrap_or(i64::MAX);
        self.store.read(move |db| db.messages_after(after, limit)).await
    }

    /// The project slug and the agent's stored name that `project_key` and `agent_name` name
    /// (the lookups and errors of every tool): what a subscription matches deliveries by.
    pub async fn mailbox_owner(
        &self,
        project_key: String,
        agent_name: String,
    ) -> Result<(String, String)> {
        self.store
            .read(move |db| {
                let project = resolve::project(db, &project_key)?;
                let agent = resolve::agent(db, &project, &agent_name, "agent")?;
                Ok((project.slug, agent.name))
            })
            .await
    }

    /// The marks of the file reservations of the projects with these slugs, now (a project
    /// that is gone has none): a subscription to a project's reservations is told when its
    /// mark moves.
    pub async fn reservation_marks(
        &self,
        slugs: Vec<String>,
    ) -> Result<Vec<(String, Option<ReservationMark>)>> {
        let now = Timestamp::now().to_db();
        self.store
            .read_short(move |db| {
                slugs
                    .into_iter()
                    .map(|slug| {
                        let mark = db.reservation_mark(&slug, &now)?;
                        Ok((slug, mark))
                    })
                    .collect()
            })
            .await
    }

    /// The slug of the project `project_key` names (the lookups and errors of every tool).
    pub async fn project_slug(&self, project_key: String) -> Result<String> {
        self.store.read(move |db| Ok(resolve::project(db, &project_key)?.slug)).await
    }
}
