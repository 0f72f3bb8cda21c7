//! Queries on `agent_links` (directed contact links).

use super::Db;
use super::driver::{Row, args};
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::records::LinkId;
use crate::records::{AgentId, ContactLink, LinkStatus, ProjectId};

const COLUMNS: &str = "l.id, l.a_project_id, l.a_agent_id, l.b_project_id, l.b_agent_id, \
     l.status, l.reason, l.created_ts, l.updated_ts, l.expires_ts";

fn link(row: &Row<'_>) -> Result<ContactLink> {
    Ok(ContactLink {
        id: row.get(0)?,
        a_project_id: row.get(1)?,
        a_agent_id: row.get(2)?,
        b_project_id: row.get(3)?,
        b_agent_id: row.get(4)?,
        status: row.get(5)?,
        reason: row.get(6)?,
        created_ts: row.get(7)?,
        updated_ts: row.get(8)?,
        expires_ts: row.get(9)?,
    })
}

/// A link together with the name of the agent at its other end.
#[derive(Debug, Clone)]
pub struct LinkWithPeer {
    pub link: ContactLink,
    pub peer_name: String,
    pub peer_project_human_key: String,
}

impl Db<'_> {
    /// The link from agent `a` to agent `b`, if any.
    pub fn link_between(
        &self,
        a_agent_id: AgentId,
        b_agent_id: AgentId,
    ) -> Result<Option<ContactLink>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM agent_links l WHERE l.a_agent_id = ?1 AND l.b_agent_id = ?2"
        );
        self.query_opt(&sql, args![a_agent_id, b_agent_id], link)
    }

    /// Creates or overwrites the A→B link's status, reason and expiry.
    #[allow(clippy::too_many_arguments)]
    pub fn upsert_link(
        &self,
        a: (ProjectId, AgentId),
        b: (ProjectId, AgentId),
        status: LinkStatus,
        reason: &str,
        expires_ts: Option<Timestamp>,
        now: Timestamp,
    ) -> Result<()> {
        self.execute(
            "INSERT INTO agent_links (a_project_id, a_agent_id, b_project_id, b_agent_id,
                 status, reason, created_ts, updated_ts, expires_ts)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8)
             ON CONFLICT (a_project_id, a_agent_id, b_project_id, b_agent_id) DO UPDATE
             SET status = excluded.status, reason = excluded.reason,
                 updated_ts = excluded.updated_ts, expires_ts = excluded.expires_ts",
            args![a.0, a.1, b.0, b.1, status, reason, now, expires_ts],
        )
        .map(drop)
    }

    /// Sets status and expiry of an existing link (reason kept).
    pub fn update_link_status(
        &self,
        id: LinkId,
        status: LinkStatus,
        expires_ts: Option<Timestamp>,
        now: Timestamp,
    ) -> Result<()> {
        self.execute(
            "UPDATE agent_links SET status = ?2, expires_ts = ?3, updated_ts = ?4 WHERE id = ?1",
            args![id, status, expires_ts, now],
        )
        .map(drop)
    }

    /// Links the agent started (outgoing), newest update first.
    pub fn outgoing_links(&self, agent_id: AgentId) -> Result<Vec<LinkWithPeer>> {
        self.links_where("l.a_agent_id = ?1", "l.b_agent_id", agent_id)
    }

    /// Links pointing at the agent (incoming), newest update first.
    pub fn incoming_links(&self, agent_id: AgentId) -> Result<Vec<LinkWithPeer>> {
        self.links_where("l.b_agent_id = ?1", "l.a_agent_id", agent_id)
    }

    fn links_where(
        &self,
        filter: &str,
        peer: &str,
        agent_id: AgentId,
    ) -> Result<Vec<LinkWithPeer>> {
        let sql = format!(
            "SELECT {COLUMNS}, p.name, pp.human_key FROM agent_links l
             JOIN agents p ON p.id = {peer} JOIN projects pp ON pp.id = p.project_id
             WHERE {filter} ORDER BY l.updated_ts DESC, l.id DESC"
        );
        self.query_vec(&sql, args![agent_id], |row| {
            Ok(LinkWithPeer {
                link: link(row)?,
                peer_name: row.get(10)?,
                peer_project_human_key: row.get(11)?,
            })
        })
    }
}
