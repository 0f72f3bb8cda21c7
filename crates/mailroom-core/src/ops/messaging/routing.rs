//! Recipient routing for send and reply (docs/compat/tools.md §4.2): plain names are agents of the
//! sender's project; `project:<slug-or-key>#<Name>` and `<Name>@<project>` address an agent of
//! another project, which is reachable only through an approved contact link from the sender
//! (or, for those explicit forms, when that agent already wrote to the sender in this thread).
//! A plain name that is not local may still reach a linked agent of that name elsewhere.

use crate::Category;
use crate::error::{Error, Result};
use crate::model::bounds;
use crate::model::time::Timestamp;
use crate::ops::contacts::{REQUEST_TTL_SECONDS, file_request};
use crate::ops::resolve;
use crate::records::{Agent, AgentId, ContactPolicy, Project, RecipientKind};
use crate::store::Db;

/// Error type of a send with recipients that could not be routed.
pub(crate) const RECIPIENT_NOT_FOUND: &str = "RECIPIENT_NOT_FOUND";

/// One recipient as written by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Address<'a> {
    /// A name in the sender's project (or of a linked agent elsewhere).
    Plain(&'a str),
    /// An agent of the named project: `project:<key>#<Name>` or `<Name>@<key>`.
    External { project_key: &'a str, name: &'a str, at_form: bool },
}

/// Splits an address into its form. `Name@key` is only a cross-project address when `key`
/// names a project, which the caller checks (the reference falls back to the plain name).
pub(crate) fn parse_address(raw: &str) -> Address<'_> {
    if let Some(rest) = raw.strip_prefix("project:")
        && let Some((key, name)) = rest.split_once('#')
        && !key.trim().is_empty()
        && !name.trim().is_empty()
    {
        return Address::External { project_key: key.trim(), name: name.trim(), at_form: false };
    }
    if let Some((name, key)) = raw.rsplit_once('@')
        && !key.trim().is_empty()
        && !name.trim().is_empty()
    {
        return Address::External { project_key: key.trim(), name: name.trim(), at_form: true };
    }
    Address::Plain(raw)
}

/// Raw to/cc/bcc names, de-duplicated within and across kinds (first occurrence wins).
pub(crate) struct RecipientNames {
    entries: Vec<(String, RecipientKind)>,
}

/// Who is sending, from where, in which thread: what routing needs to decide reachability.
pub(crate) struct Route<'a> {
    pub project: &'a Project,
    pub sender: &'a Agent,
    pub thread_id: Option<&'a str>,
    /// Leads the RECIPIENT_NOT_FOUND message ("Unable to send message").
    pub lead: &'a str,
    /// File a contact request with an existing external agent that is not reachable yet
    /// (send_message's auto-handshake; the send still fails until the request is approved).
    pub auto_contact: bool,
}

/// Names that could not be routed, for the error message.
#[derive(Default)]
struct Unrouted {
    local: Vec<String>,
    external: Vec<String>,
    /// External agents a contact request was filed with.
    requested: Vec<String>,
}

impl RecipientNames {
    pub(crate) fn new(to: &[String], cc: &[String], bcc: &[String]) -> Self {
        let mut entries: Vec<(String, RecipientKind)> = Vec::new();
        for (names, kind) in
            [(to, RecipientKind::To), (cc, RecipientKind::Cc), (bcc, RecipientKind::Bcc)]
        {
            for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
                if !entries.iter().any(|(seen, _)| seen.eq_ignore_ascii_case(name)) {
                    entries.push((name.to_string(), kind));
                }
            }
        }
        Self { entries }
    }

    pub(crate) fn all(&self) -> Vec<String> {
        self.entries.iter().map(|(n, _)| n.clone()).collect()
    }

    /// Routes every name to an agent (of this or another project) or fails with
    /// RECIPIENT_NOT_FOUND listing what could not be routed. A reachable external agent whose
    /// policy is block_all fails with CONTACT_BLOCKED.
    pub(crate) fn resolve(
        &self,
        db: &Db<'_>,
        route: &Route<'_>,
    ) -> Result<Vec<(Agent, RecipientKind)>> {
        let now = Timestamp::now();
        let mut found: Vec<(Agent, RecipientKind)> = Vec::with_capacity(self.entries.len());
        let mut unrouted = Unrouted::default();
        for (name, kind) in &self.entries {
            let Some(agent) = route_one(db, route, name, now, &mut unrouted)? else { continue };
            if agent.project_id != route.project.id
                && agent.contact_policy == ContactPolicy::BlockAll
            {
                return Err(super::policy::blocked(&agent));
            }
            if !found.iter().any(|(a, _)| a.id == agent.id) {
                found.push((agent, *kind));
            }
        }
        if unrouted.local.is_empty() && unrouted.external.is_empty() {
            return Ok(found);
        }
        Err(not_found(route, &unrouted))
    }
}

/// The agent `name` reaches, or `None` after noting it as unrouted.
fn route_one(
    db: &Db<'_>,
    route: &Route<'_>,
    name: &str,
    now: Timestamp,
    unrouted: &mut Unrouted,
) -> Result<Option<Agent>> {
    let mut address = parse_address(name);
    let mut target_project = None;
    if let Address::External { project_key, at_form, .. } = address {
        match resolve::project(db, project_key) {
            Ok(project) => target_project = Some(project),
            // `Name@key` with an unknown project is just a (probably mistyped) plain name.
            Err(e) if at_form && e.category == Category::NotFound => address = Address::Plain(name),
            Err(e) if e.category == Category::NotFound => {
                unrouted.external.push(name.to_string());
                return Ok(None);
            }
            Err(e) => return Err(e),
        }
    }
    match (address, target_project) {
        (Address::External { name: bare, .. }, Some(target)) if target.id != route.project.id => {
            let agent = db.agent_by_name(target.id, bare)?;
            let reachable = match &agent {
                Some(agent) => {
                    linked(db, route.sender, agent.id, now)?
                        || match route.thread_id {
                            Some(thread) => {
                                db.wrote_in_thread_to(thread, agent.id, route.sender.id)?
                            }
                            None => false,
                        }
                }
                None => false,
            };
            match agent {
                Some(agent) if reachable => Ok(Some(agent)),
                Some(agent) if route.auto_contact => {
                    let requester = (route.project, route.sender);
                    file_request(db, requester, (&target, &agent), "", REQUEST_TTL_SECONDS, now)?;
                    unrouted.external.push(name.to_string());
                    unrouted.requested.push(name.to_string());
                    Ok(None)
                }
                _ => {
                    unrouted.external.push(name.to_string());
                    Ok(None)
                }
            }
        }
        (Address::External { name: bare, .. }, _) => local(db, route, bare, now, unrouted),
        (Address::Plain(plain), _) => local(db, route, plain, now, unrouted),
    }
}

/// A name of the sender's project, or failing that an agent of that name elsewhere that the
/// sender has an approved link to.
fn local(
    db: &Db<'_>,
    route: &Route<'_>,
    name: &str,
    now: Timestamp,
    unrouted: &mut Unrouted,
) -> Result<Option<Agent>> {
    if let Some(agent) = db.agent_by_name(route.project.id, name)? {
        return Ok(Some(agent));
    }
    let linked_elsewhere = db.outgoing_links(route.sender.id)?.into_iter().find(|l| {
        l.peer_name.eq_ignore_ascii_case(name)
            && l.link.b_project_id != route.project.id
            && l.link.is_active_approved(now)
    });
    if let Some(link) = linked_elsewhere {
        return db.agent_by_id(link.link.b_agent_id);
    }
    unrouted.local.push(name.to_string());
    Ok(None)
}

fn linked(db: &Db<'_>, sender: &Agent, target_id: AgentId, now: Timestamp) -> Result<bool> {
    Ok(db.link_between(sender.id, target_id)?.is_some_and(|l| l.is_active_approved(now)))
}

fn not_found(route: &Route<'_>, unrouted: &Unrouted) -> Error {
    let project = route.project;
    let mut parts = Vec::new();
    if !unrouted.local.is_empty() {
        parts.push(format!(
            "local recipients {} are not registered in project '{}'; register them with \
             register_agent, or check the spelling (list the project's agents with \
             resource://agents/{})",
            bounds::listed_names(&unrouted.local),
            project.human_key,
            project.slug
        ));
    }
    if !unrouted.external.is_empty() {
        parts.push(format!(
            "external recipients {} cannot be reached: the project or agent does not exist, or \
             '{}' has no approved contact link to them (ask with request_contact(to_project=..., \
             to_agent=...) and have them approve with respond_contact)",
            bounds::listed_names(&unrouted.external),
            route.sender.name
        ));
    }
    let mut message = format!("{} — {}.", route.lead, parts.join("; "));
    if !unrouted.requested.is_empty() {
        message.push_str(&format!(
            " Contact requests were sent automatically to: {}; once they approve, retry.",
            bounds::listed_names(&unrouted.requested)
        ));
    }
    Error::new(Category::NotFound, RECIPIENT_NOT_FOUND, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(raw: &str, expected: Address<'_>) {
        assert_eq!(parse_address(raw), expected, "{raw:?}");
    }

    #[test]
    fn addresses_split_into_their_forms() {
        let external =
            |project_key, name, at_form| Address::External { project_key, name, at_form };
        check("BlueLake", Address::Plain("BlueLake"));
        check("project:abs-path-backend#BlueLake", external("abs-path-backend", "BlueLake", false));
        check("project:/abs/path/x#Green", external("/abs/path/x", "Green", false));
        check("BlueLake@abs-path-backend", external("abs-path-backend", "BlueLake", true));
        check("BlueLake@/abs/path/x", external("/abs/path/x", "BlueLake", true));
        check("project:#BlueLake", Address::Plain("project:#BlueLake"));
        check("project:x#", Address::Plain("project:x#"));
        check("@x", Address::Plain("@x"));
        check("Blue@", Address::Plain("Blue@"));
    }
}
