//! The product bus (docs/compat/tools.md §9): products group projects, and product-wide reads
//! search, list inboxes and summarise threads across the linked projects.
//!
//! Product-wide tools only read. They cover the linked projects where the caller is an agent
//! (same name in each project; a given registration token must match there), and within each
//! project only what that agent sent or received. Without an agent name they read the linked
//! projects whole, as the reference's v0.3.0 `search_messages` reads a project (the fixture's
//! mode: no authentication). Messages are never copied between projects.

use std::cmp::Reverse;

use serde::Serialize;

use super::agents::credentials::constant_time_eq;
use super::messaging::{InboxFilter, inbox_limit, mark_listed_read, parse_since};
use super::output::{MessageOut, ProjectOut};
use super::search::{
    SearchItem, ThreadExample, examples_of, excerpts_of, search_hits, summarize_rows,
};
use super::{Mailroom, resolve};
use crate::error::{Error, Result};
use crate::model::bounds;
use crate::model::summary::ThreadSummary;
use crate::model::time::Timestamp;
use crate::records::ListedMessage;
use crate::records::ProductId;
use crate::records::{Agent, AgentId, MessageId, Product, Project, ProjectId};
use crate::store::Db;
use crate::store::db::messages::InboxQuery;
use crate::store::db::search::SearchScope;

/// Longest product display name (the column's size).
const MAX_PRODUCT_NAME_CHARS: usize = 255;
/// Length of a generated product uid (the reference's `uuid4().hex[:20]`).
const GENERATED_UID_CHARS: usize = 20;
/// Messages of one thread considered by a product summary.
const PRODUCT_THREAD_LIMIT: i64 = 10_000;

/// ProductOut: `{id, product_uid, name, created_at}`.
#[derive(Debug, Clone, Serialize)]
pub struct ProductOut {
    pub id: ProductId,
    pub product_uid: String,
    pub name: String,
    pub created_at: Timestamp,
}

/// `resource://product/{key}`: a product and the projects linked to it.
#[derive(Debug, Clone, Serialize)]
pub struct ProductDetail {
    #[serde(flatten)]
    pub product: ProductOut,
    pub projects: Vec<ProjectOut>,
}

/// Result of products_link.
#[derive(Debug, Clone, Serialize)]
pub struct ProductLinked {
    pub product: ProductRef,
    pub project: ProjectRef,
    pub linked: bool,
}

/// A product as products_link names it.
#[derive(Debug, Clone, Serialize)]
pub struct ProductRef {
    pub id: ProductId,
    pub product_uid: String,
    pub name: String,
}

/// A project as products_link names it.
#[derive(Debug, Clone, Serialize)]
pub struct ProjectRef {
    pub id: ProjectId,
    pub slug: String,
    pub human_key: String,
}

/// One search_messages_product result: a search result plus the project it lives in.
#[derive(Debug, Clone, Serialize)]
pub struct ProductSearchResult {
    #[serde(flatten)]
    pub item: SearchItem,
    pub project_id: ProjectId,
}

/// Result of search_messages_product: `{"result": [...]}`.
#[derive(Debug, Clone, Serialize)]
pub struct ProductSearchResults {
    pub result: Vec<ProductSearchResult>,
}

/// Who reads across a product: an agent name (and its token, when given), or nobody in
/// particular (whole projects).
#[derive(Debug, Clone, Default)]
pub struct ProductViewer {
    pub agent_name: Option<String>,
    pub registration_token: Option<String>,
}

/// Arguments of fetch_inbox_product.
#[derive(Debug, Clone, Default)]
pub struct FetchInboxProduct {
    pub product_key: String,
    pub agent_name: String,
    pub registration_token: Option<String>,
    pub filter: InboxFilter,
}

/// Arguments of summarize_thread_product.
#[derive(Debug, Clone)]
pub struct SummarizeThreadProduct {
    pub product_key: String,
    pub thread_id: String,
    pub include_examples: bool,
    /// Refine the heuristic summary with the LLM (when the server has one).
    pub llm_mode: bool,
    pub llm_model: Option<String>,
    /// Most messages summarised (all when `None`).
    pub per_thread_limit: Option<i64>,
    pub viewer: ProductViewer,
}

/// Result of summarize_thread_product.
#[derive(Debug, Clone, Serialize)]
pub struct ProductThreadSummary {
    pub thread_id: String,
    pub summary: ProductSummary,
    pub examples: Vec<ThreadExample>,
}

/// The summary, or the reference's four-key empty summary when no project is readable.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum ProductSummary {
    Empty {
        participants: [String; 0],
        key_points: [String; 0],
        action_items: [String; 0],
        total_messages: usize,
    },
    Summary(ThreadSummary),
}

/// A linked project the caller may read, as the agent it is there (if named).
struct Readable {
    project: Project,
    agent: Option<Agent>,
}

impl Mailroom {
    /// Finds the product whose uid or name is `product_key` (or `name`), creating it if absent.
    pub async fn ensure_product(
        &self,
        product_key: Option<String>,
        name: Option<String>,
    ) -> Result<ProductOut> {
        let key = [&product_key, &name]
            .into_iter()
            .flatten()
            .map(|k| k.trim().to_string())
            .find(|k| !k.is_empty())
            .ok_or_else(|| Error::invalid("Provide product_key or name."))?;
        let display =
            display_name(name.as_deref().filter(|n| !n.trim().is_empty()).unwrap_or(&key));
        let uid = match uid_from_key(&key) {
            Some(uid) => uid,
            None => generated_uid()?,
        };
        self.store
            .write(move |db| {
                if let Some(found) = db.product_by_key(&key)? {
                    return Ok(product_out(found));
                }
                if let Some(taken) = db.product_by_key(&display)?.filter(|p| p.name == display) {
                    return Err(Error::invalid(format!(
                        "name: product name '{display}' is already used by product '{}'; \
                             pass that uid as product_key, or choose another name.",
                        taken.product_uid
                    )));
                }
                Ok(product_out(db.insert_product(&uid, &display, Timestamp::now())?))
            })
            .await
    }

    /// A product (uid or exact name) with its linked projects, oldest link first.
    pub async fn product_detail(&self, product_key: String) -> Result<ProductDetail> {
        self.store
            .read(move |db| {
                let found = product(db, &product_key)?;
                let projects = db
                    .product_projects(found.id)?
                    .iter()
                    .map(|p| ProjectOut { archived_at: None, ..ProjectOut::from(p) })
                    .collect();
                Ok(ProductDetail { product: product_out(found), projects })
            })
            .await
    }

    /// Links a project to a product (idempotent).
    pub async fn products_link(
        &self,
        product_key: String,
        project_key: String,
    ) -> Result<ProductLinked> {
        self.store
            .write(move |db| {
                let product = product(db, &product_key)?;
                let project = resolve::project(db, &project_key)?;
                db.link_product_project(product.id, project.id, Timestamp::now())?;
                Ok(ProductLinked {
                    product: ProductRef {
                        id: product.id,
                        product_uid: product.product_uid,
                        name: product.name,
                    },
                    project: ProjectRef {
                        id: project.id,
                        slug: project.slug,
                        human_key: project.human_key,
                    },
                    linked: true,
                })
            })
            .await
    }

    /// Full-text search across the product's readable projects, best match first.
    pub async fn search_messages_product(
        &self,
        product_key: String,
        query: String,
        limit: i64,
        viewer: ProductViewer,
    ) -> Result<ProductSearchResults> {
        bounds::search_query("query", &query)?;
        let limit = limit.clamp(1, 1000);
        let search = self.search.clone();
        self.store
            .read(move |db| {
                let product = product(db, &product_key)?;
                let readable = readable_projects(db, &product, &viewer)?;
                let scope = scope_of(&readable);
                let index = search.as_deref().map(crate::search_index::SearchIndexer::index);
                let result = search_hits(db, index, &scope, &query, limit)?
                    .into_iter()
                    .map(|hit| ProductSearchResult { project_id: hit.project_id, item: hit.into() })
                    .collect();
                Ok(ProductSearchResults { result })
            })
            .await
    }

    /// The agent's inboxes in every linked project it is registered in, merged newest first.
    pub async fn fetch_inbox_product(&self, req: FetchInboxProduct) -> Result<Vec<MessageOut>> {
        let limit = inbox_limit(req.filter.limit)?;
        let since = parse_since(req.filter.since_ts.as_deref())?;
        let page = move |db: &Db<'_>| {
            let product = product(db, &req.product_key)?;
            let viewer = ProductViewer {
                agent_name: Some(req.agent_name.clone()),
                registration_token: req.registration_token.clone(),
            };
            let mut rows = Vec::new();
            let mut inboxes = Vec::new();
            for readable in readable_projects(db, &product, &viewer)? {
                let Some(agent) = readable.agent else { continue };
                rows.extend(db.inbox(&InboxQuery {
                    project_id: readable.project.id,
                    agent_id: agent.id,
                    limit,
                    urgent_only: req.filter.urgent_only,
                    since,
                    topic: None,
                    unread_only: req.filter.unread_only,
                })?);
                inboxes.push((readable.project.id, agent.id));
            }
            rows.sort_by_key(|r| Reverse((r.message.created_ts, r.message.id)));
            rows.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
            if req.filter.mark_read {
                // Each project's marks take only its own messages of the list.
                let ids: Vec<MessageId> = rows.iter().map(|r| r.message.id).collect();
                for (project_id, agent_id) in inboxes {
                    mark_listed_read(db, project_id, agent_id, &ids)?;
                }
            }
            let bodies = req.filter.include_bodies;
            Ok(rows.iter().map(|r| MessageOut::from_listing(r, bodies)).collect())
        };
        if req.filter.mark_read {
            self.store.write(page).await
        } else {
            self.store.read(page).await
        }
    }

    /// Summarises one thread across the product's readable projects.
    pub async fn summarize_thread_product(
        &self,
        req: SummarizeThreadProduct,
    ) -> Result<ProductThreadSummary> {
        let thread_id = req.thread_id.trim().to_string();
        if thread_id.is_empty() {
            return Err(Error::invalid("thread_id must not be empty."));
        }
        let limit = req.per_thread_limit.unwrap_or(PRODUCT_THREAD_LIMIT).max(1);
        let (key, viewer, id) = (req.product_key.clone(), req.viewer.clone(), thread_id.clone());
        let rows = self
            .store
            .read(move |db| {
                let product = product(db, &key)?;
                let readable = readable_projects(db, &product, &viewer)?;
                if readable.is_empty() {
                    return Ok(None);
                }
                thread_rows(db, &readable, &id, limit).map(Some)
            })
            .await?;
        let Some(rows) = rows else {
            return Ok(ProductThreadSummary {
                thread_id,
                summary: ProductSummary::Empty {
                    participants: [],
                    key_points: [],
                    action_items: [],
                    total_messages: 0,
                },
                examples: Vec::new(),
            });
        };
        let summary = self
            .refine_thread_summary(
                summarize_rows(&rows),
                &excerpts_of(&rows),
                req.llm_mode,
                req.llm_model.as_deref(),
            )
            .await;
        let examples = if req.include_examples { examples_of(&rows) } else { Vec::new() };
        Ok(ProductThreadSummary { thread_id, summary: ProductSummary::Summary(summary), examples })
    }
}

fn product(db: &Db<'_>, key: &str) -> Result<Product> {
    let key = key.trim();
    if key.is_empty() {
        return Err(Error::invalid("product_key must not be empty."));
    }
    db.product_by_key(key)?.ok_or_else(|| {
        Error::not_found(format!(
            "Product '{key}' not found. Create it with ensure_product, then link projects with \
             products_link."
        ))
    })
}

fn product_out(p: Product) -> ProductOut {
    ProductOut { id: p.id, product_uid: p.product_uid, name: p.name, created_at: p.created_at }
}

/// The linked projects the viewer may read. With an agent name: those where an agent of that
/// name exists (and holds the given token); none at all is an error naming why.
fn readable_projects(
    db: &Db<'_>,
    product: &Product,
    viewer: &ProductViewer,
) -> Result<Vec<Readable>> {
    let projects = db.product_projects(product.id)?;
    let Some(name) = viewer.agent_name.as_deref().map(str::trim).filter(|n| !n.is_empty()) else {
        return Ok(projects.into_iter().map(|project| Readable { project, agent: None }).collect());
    };
    let token = viewer.registration_token.as_deref().filter(|t| !t.is_empty());
    let mut readable = Vec::new();
    let mut registered = false;
    for project in projects {
        let Some(agent) = db.agent_by_name(project.id, name)? else { continue };
        registered = true;
        let stored = agent.registration_token.as_deref();
        if token
            .is_none_or(|t| stored.is_some_and(|s| constant_time_eq(s.as_bytes(), t.as_bytes())))
        {
            readable.push(Readable { project, agent: Some(agent) });
        }
    }
    if readable.is_empty() {
        let uid = &product.product_uid;
        return Err(if registered {
            Error::denied(
                "AUTHENTICATION_REQUIRED",
                format!(
                    "Invalid registration_token for agent '{name}' in every project linked to \
                     product '{uid}'."
                ),
            )
        } else {
            Error::not_found(format!(
                "Agent '{name}' is not registered in any project linked to product '{uid}'."
            ))
        });
    }
    Ok(readable)
}

fn scope_of(readable: &[Readable]) -> SearchScope {
    let viewer_ids: Vec<AgentId> =
        readable.iter().filter_map(|r| r.agent.as_ref().map(|a| a.id)).collect();
    SearchScope {
        project_ids: readable.iter().map(|r| r.project.id).collect(),
        viewer_ids: (!viewer_ids.is_empty()).then_some(viewer_ids),
    }
}

/// The thread's messages in every readable project (only those its agent sent or received),
/// oldest first, at most `limit`.
fn thread_rows(
    db: &Db<'_>,
    readable: &[Readable],
    thread_id: &str,
    limit: i64,
) -> Result<Vec<ListedMessage>> {
    let mut rows = Vec::new();
    for r in readable {
        let viewer = r.agent.as_ref().map(|a| a.id);
        rows.extend(db.thread_messages_seen_by(r.project.id, thread_id, viewer, limit)?);
    }
    rows.sort_by_key(|r| (r.message.created_ts, r.message.id));
    rows.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    Ok(rows)
}

/// A product key that is 8-64 hex digits is used (lower-cased) as the uid.
fn uid_from_key(key: &str) -> Option<String> {
    let hex = (8..=64).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_hexdigit());
    hex.then(|| key.to_ascii_lowercase())
}

fn generated_uid() -> Result<String> {
    let mut bytes = [0u8; GENERATED_UID_CHARS / 2];
    getrandom::fill(&mut bytes).map_err(|e| Error::internal(format!("no randomness: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whitespace runs collapsed to one space, at most 255 characters.
fn display_name(raw: &str) -> String {
    let collapsed = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    collapsed.chars().take(MAX_PRODUCT_NAME_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_keys_become_uids_and_others_do_not() {
        let check = |key: &str, expected: Option<&str>| {
            assert_eq!(uid_from_key(key).as_deref(), expected, "{key:?}");
        };
        check("0123456789abcdef0123", Some("0123456789abcdef0123"));
        check("DEADBEEF", Some("deadbeef"));
        check("deadbee", None);
        check(&"a".repeat(64), Some(&"a".repeat(64)));
        check(&"a".repeat(65), None);
        check("WidgetBus", None);
        check("0123-4567-89ab", None);
    }

    #[test]
    fn generated_uids_are_twenty_hex_digits() {
        let uid = generated_uid().expect("uid");
        assert_eq!(uid.len(), 20);
        assert!(uid_from_key(&uid).is_some(), "{uid}");
        assert_ne!(uid, generated_uid().expect("uid"));
    }

    #[test]
    fn display_names_collapse_whitespace_and_are_capped() {
        assert_eq!(display_name("  Widget \t  Bus \n"), "Widget Bus");
        assert_eq!(display_name(&"x".repeat(300)).chars().count(), 255);
    }
}
