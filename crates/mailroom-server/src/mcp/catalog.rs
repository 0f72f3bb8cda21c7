//! What the server knows about each tool besides its code, in one table (docs/compat/tools.md §11):
//! cluster, capabilities, complexity, and how a call is authenticated (its §1.7: which argument
//! names the acting agent and which carries its token). The registry reads it once at
//! start-up; the tool filter (`TOOLS_FILTER_*`) and the tooling resources read it too.

/// How a tool call is authenticated when tool authentication is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// No authentication.
    Open,
    /// The agent named by one of `agent` must prove itself with `token` or a bound session.
    Agent,
    /// As `Agent`; an agent without a stored token may also be acted on by another agent of
    /// its project bound in this session (retire_agent, hard_delete_agent).
    AgentOrAdjacent,
    /// As `Agent`, but only when the named agent already exists (registration: a new name
    /// needs no proof).
    ExistingAgent,
    /// The named agent if given, else the session's agent in the project (read tools that
    /// scope results to a viewer).
    Viewer,
    /// Any agent of the project: the session's, or the holder of `token` (project admin).
    /// When the tool lists `agent` arguments and the call names an agent, as `Agent` for
    /// that agent instead: acting on one agent's things needs that agent.
    ProjectAdmin,
}

/// The authentication of one tool: rule and argument names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthSpec {
    pub rule: Rule,
    /// The argument naming the project.
    pub project: &'static str,
    /// Arguments naming the acting agent, first present wins (aliases).
    pub agent: &'static [&'static str],
    /// The argument carrying the token.
    pub token: &'static str,
}

/// One row of the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolInfo {
    pub name: &'static str,
    pub cluster: &'static str,
    /// Sorted.
    pub capabilities: &'static [&'static str],
    pub complexity: &'static str,
    pub auth: AuthSpec,
}

const OPEN: AuthSpec = AuthSpec { rule: Rule::Open, project: "", agent: &[], token: "" };
const TOKEN: &str = "registration_token";

const fn agent(name: &'static [&'static str]) -> AuthSpec {
    AuthSpec { rule: Rule::Agent, project: "project_key", agent: name, token: TOKEN }
}
const fn adjacent() -> AuthSpec {
    AuthSpec { rule: Rule::AgentOrAdjacent, ..agent(&["agent_name"]) }
}
const fn viewer() -> AuthSpec {
    AuthSpec { rule: Rule::Viewer, ..agent(&["agent_name"]) }
}
const fn admin() -> AuthSpec {
    AuthSpec { rule: Rule::ProjectAdmin, ..agent(&[]) }
}
/// Project admin, or the agent named by `agent_name` when the call names one.
const fn admin_or_agent() -> AuthSpec {
    AuthSpec { rule: Rule::ProjectAdmin, ..agent(AGENT_NAME) }
}
const fn sender() -> AuthSpec {
    AuthSpec { token: "sender_token", ..agent(&["sender_name"]) }
}
/// Registration tools (declared with `Tool::registration`) also bind the session.
const fn registration(project: &'static str, name: &'static [&'static str]) -> AuthSpec {
    AuthSpec { rule: Rule::ExistingAgent, project, ..agent(name) }
}

const fn info(
    name: &'static str,
    cluster: &'static str,
    capabilities: &'static [&'static str],
    auth: AuthSpec,
) -> ToolInfo {
    ToolInfo { name, cluster, capabilities, complexity: "medium", auth }
}

const fn low(mut row: ToolInfo) -> ToolInfo {
    row.complexity = "low";
    row
}

const AGENT_NAME: &[&str] = &["agent_name"];

/// Every tool the reference defines (HEAD), alphabetically. A tool missing here is refused
/// at start-up by the registry's tests.
pub const CATALOG: &[ToolInfo] = &[
    info("acknowledge_message", "messaging", &["ack", "messaging"], agent(AGENT_NAME)),
    info("acquire_build_slot", "build_slots", &["build"], agent(AGENT_NAME)),
    info("archive_project", "infrastructure", &["infrastructure"], admin()),
    info("create_agent_identity", "identity", &["identity"], OPEN),
    info("deregister_agent", "identity", &["identity"], agent(AGENT_NAME)),
    info("ensure_product", "product_bus", &["product"], OPEN),
    low(info("ensure_project", "infrastructure", &["infrastructure", "storage"], OPEN)),
    info("expire_window", "identity", &["identity", "write"], OPEN),
    info("fetch_inbox", "messaging", &["messaging", "read"], agent(AGENT_NAME)),
    info("fetch_inbox_events", "messaging", &["messaging", "read"], agent(AGENT_NAME)),
    // Product tools authorize per linked project inside the product bus
    // (docs/compat/tools.md §9.3).
    info("fetch_inbox_product", "product_bus", &["messaging", "read"], OPEN),
    info("fetch_summary", "search", &["read", "summarization"], OPEN),
    info("fetch_topic", "messaging", &["messaging", "read"], viewer()),
    info(
        "file_reservation_paths",
        "file_reservations",
        &["file_reservations", "repository"],
        agent(AGENT_NAME),
    ),
    info(
        "force_release_file_reservation",
        "file_reservations",
        &["file_reservations", "repository"],
        agent(AGENT_NAME),
    ),
    info("hard_delete_agent", "identity", &["identity"], adjacent()),
    info("hard_delete_project", "infrastructure", &["infrastructure"], admin()),
    low(info("health_check", "infrastructure", &["infrastructure"], OPEN)),
    info("install_precommit_guard", "infrastructure", &["infrastructure", "repository"], OPEN),
    // mailroom's own tool (not in the reference): its own cluster, as metrics.rs on main has it.
    info("list_agents", "other", &["audit", "identity"], OPEN),
    info("list_contacts", "contact", &["audit", "contact"], agent(AGENT_NAME)),
    // Webhooks (mailroom's): any agent of the project manages the project-wide ones; an
    // agent's own need that agent (docs/compat/tools.md §4.13).
    info("list_webhooks", "messaging", &["audit", "messaging"], admin_or_agent()),
    low(info("list_window_identities", "identity", &["identity"], OPEN)),
    info(
        "macro_contact_handshake",
        "workflow_macros",
        &["contact", "messaging", "workflow"],
        AuthSpec { token: "requester_registration_token", ..agent(&["requester", "agent_name"]) },
    ),
    info(
        "macro_file_reservation_cycle",
        "workflow_macros",
        &["file_reservations", "repository", "workflow"],
        agent(AGENT_NAME),
    ),
    info(
        "macro_prepare_thread",
        "workflow_macros",
        &["messaging", "summarization", "workflow"],
        registration("project_key", AGENT_NAME),
    ),
    info(
        "macro_start_session",
        "workflow_macros",
        &["file_reservations", "identity", "messaging", "workflow"],
        registration("human_key", AGENT_NAME),
    ),
    info("mark_message_read", "messaging", &["messaging", "read"], agent(AGENT_NAME)),
    info("message_receipts", "messaging", &["messaging", "read"], agent(AGENT_NAME)),
    info("products_link", "product_bus", &["product"], OPEN),
    info("purge_old_messages", "messaging", &["messaging", "write"], OPEN),
    info("register_agent", "identity", &["identity"], registration("project_key", &["name"])),
    info("register_webhook", "messaging", &["configure", "messaging"], admin_or_agent()),
    info("release_build_slot", "build_slots", &["build"], agent(AGENT_NAME)),
    info(
        "release_file_reservations",
        "file_reservations",
        &["file_reservations"],
        agent(AGENT_NAME),
    ),
    info("remove_webhook", "messaging", &["configure", "messaging"], admin_or_agent()),
    info("rename_window", "identity", &["identity", "write"], OPEN),
    info("renew_build_slot", "build_slots", &["build"], agent(AGENT_NAME)),
    info("renew_file_reservations", "file_reservations", &["file_reservations"], agent(AGENT_NAME)),
    info("reply_message", "messaging", &["messaging", "write"], sender()),
    info("request_contact", "contact", &["contact"], agent(&["from_agent"])),
    info("respond_contact", "contact", &["contact"], agent(&["to_agent"])),
    info("retire_agent", "identity", &["identity"], adjacent()),
    info("run_upkeep", "other", &["audit", "write"], OPEN),
    info("search_messages", "search", &["search"], viewer()),
    info("search_messages_product", "product_bus", &["search"], OPEN),
    info("send_message", "messaging", &["messaging", "write"], sender()),
    info("set_contact_policy", "contact", &["configure", "contact"], agent(AGENT_NAME)),
    info("summarize_recent", "search", &["search", "summarization"], OPEN),
    info("summarize_thread", "search", &["search", "summarization"], viewer()),
    info("summarize_thread_product", "product_bus", &["search", "summarization"], OPEN),
    info("unarchive_project", "infrastructure", &["infrastructure"], admin()),
    info("uninstall_precommit_guard", "infrastructure", &["infrastructure", "repository"], OPEN),
    info("unretire_agent", "identity", &["identity"], agent(AGENT_NAME)),
    info("webhook_deliveries", "messaging", &["audit", "messaging"], admin_or_agent()),
    info("whois", "identity", &["audit", "identity"], agent(AGENT_NAME)),
];

/// The catalog row of a tool.
pub fn lookup(name: &str) -> Option<&'static ToolInfo> {
    CATALOG.iter().find(|t| t.name == name)
}

/// The row of a tool missing from the catalog: cluster "other" (as mailroom's own tools are
/// reported), no authentication. The registry's tests refuse such a tool; this keeps a
/// lookup total.
static UNCATALOGUED: ToolInfo =
    ToolInfo { name: "", cluster: "other", capabilities: &[], complexity: "medium", auth: OPEN };

/// The catalog row of a tool, or [`UNCATALOGUED`].
pub fn info_of(name: &str) -> &'static ToolInfo {
    lookup(name).unwrap_or(&UNCATALOGUED)
}

impl ToolInfo {
    /// Whether the tool belongs to a WORKTREES_ENABLED feature (product bus, build slots):
    /// unlisted and uncallable without it, as in the reference.
    pub fn worktrees_only(&self) -> bool {
        matches!(self.cluster, "product_bus" | "build_slots")
    }
}

/// Which tools `TOOLS_FILTER_*` keeps (docs/compat/tools.md §11, "Which tools are registered").
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolFilter {
    /// Every tool (`TOOLS_FILTER_ENABLED=false`, or profile `full` or unknown).
    #[default]
    Full,
    /// Profile `core`.
    Core,
    /// Profile `minimal`.
    Minimal,
    /// Profile `messaging`.
    Messaging,
    /// Profile `custom`: clusters and tool names, kept (`include`) or removed (`exclude`).
    Custom { clusters: Vec<String>, tools: Vec<String>, exclude: bool },
}

impl ToolFilter {
    /// Reads `TOOLS_FILTER_ENABLED`, `_PROFILE`, `_MODE`, `_CLUSTERS`, `_TOOLS`.
    pub fn from_env(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Self, String> {
        let enabled = match lookup("TOOLS_FILTER_ENABLED") {
            Some(v) => mailroom_core::config::parse_bool("TOOLS_FILTER_ENABLED", &v)?,
            None => false,
        };
        if !enabled {
            return Ok(Self::Full);
        }
        let profile = lookup("TOOLS_FILTER_PROFILE").unwrap_or_default();
        Ok(match profile.trim().to_ascii_lowercase().as_str() {
            "core" => Self::Core,
            "minimal" => Self::Minimal,
            "messaging" => Self::Messaging,
            "custom" => Self::Custom {
                clusters: crate::config::csv(&lookup("TOOLS_FILTER_CLUSTERS").unwrap_or_default()),
                tools: crate::config::csv(&lookup("TOOLS_FILTER_TOOLS").unwrap_or_default()),
                exclude: lookup("TOOLS_FILTER_MODE")
                    .is_some_and(|m| m.trim().eq_ignore_ascii_case("exclude")),
            },
            _ => Self::Full,
        })
    }

    /// Whether the tool `name` of `cluster` stays registered.
    pub fn keeps(&self, name: &str, cluster: &str) -> bool {
        let listed = |clusters: &[&str], tools: &[&str]| {
            clusters.contains(&cluster) || tools.contains(&name)
        };
        match self {
            Self::Full => true,
            Self::Core => listed(
                &["identity", "messaging", "file_reservations", "workflow_macros"],
                &["health_check", "ensure_project"],
            ),
            Self::Minimal => listed(
                &[],
                &[
                    "health_check",
                    "ensure_project",
                    "register_agent",
                    "send_message",
                    "fetch_inbox",
                    "acknowledge_message",
                ],
            ),
            Self::Messaging => listed(
                &["identity", "messaging", "contact"],
                &["health_check", "ensure_project", "search_messages"],
            ),
            Self::Custom { clusters, tools, exclude } => {
                if clusters.is_empty() && tools.is_empty() {
                    return true;
                }
                let hit = clusters.iter().any(|c| c == cluster) || tools.iter().any(|t| t == name);
                hit != *exclude
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_is_alphabetical_with_sorted_capabilities() {
        let names: Vec<&str> = CATALOG.iter().map(|t| t.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted);
        for row in CATALOG {
            let mut caps = row.capabilities.to_vec();
            caps.sort_unstable();
            assert_eq!(caps, row.capabilities, "{}", row.name);
        }
    }

    #[test]
    fn rows_carry_the_metadata_the_tooling_resources_report() {
        assert_eq!(info_of("health_check").complexity, "low");
        assert_eq!(info_of("whois").capabilities, ["audit", "identity"]);
        assert_eq!(info_of("list_agents").cluster, "other");
        assert_eq!(info_of("not_a_tool").cluster, "other");
        assert_eq!(info_of("not_a_tool").auth.rule, Rule::Open);
    }

    #[test]
    fn worktrees_only_tools_are_the_product_bus_and_build_slots() {
        let gated: Vec<&str> =
            CATALOG.iter().filter(|t| t.worktrees_only()).map(|t| t.name).collect();
        assert_eq!(
            gated,
            [
                "acquire_build_slot",
                "ensure_product",
                "fetch_inbox_product",
                "products_link",
                "release_build_slot",
                "renew_build_slot",
                "search_messages_product",
                "summarize_thread_product",
            ]
        );
    }

    fn check(filter: &ToolFilter, name: &str, kept: bool) {
        let cluster = lookup(name).map_or("?", |t| t.cluster);
        assert_eq!(filter.keeps(name, cluster), kept, "{filter:?} {name}");
    }

    #[test]
    fn profiles_keep_their_clusters_and_tools() {
        check(&ToolFilter::Full, "summarize_thread", true);
        check(&ToolFilter::Core, "whois", true);
        check(&ToolFilter::Core, "health_check", true);
        check(&ToolFilter::Core, "search_messages", false);
        check(&ToolFilter::Minimal, "fetch_inbox", true);
        check(&ToolFilter::Minimal, "whois", false);
        check(&ToolFilter::Messaging, "request_contact", true);
        check(&ToolFilter::Messaging, "search_messages", true);
        check(&ToolFilter::Messaging, "summarize_thread", false);
        let include = ToolFilter::Custom {
            clusters: vec!["contact".into()],
            tools: vec!["whois".into()],
            exclude: false,
        };
        check(&include, "list_contacts", true);
        check(&include, "whois", true);
        check(&include, "send_message", false);
        let exclude = ToolFilter::Custom {
            clusters: vec!["contact".into()],
            tools: vec!["whois".into()],
            exclude: true,
        };
        check(&exclude, "list_contacts", false);
        check(&exclude, "send_message", true);
        let empty = ToolFilter::Custom { clusters: vec![], tools: vec![], exclude: true };
        check(&empty, "send_message", true);
    }

    #[test]
    fn the_filter_is_off_unless_enabled() {
        let env = |profile: &'static str, enabled: &'static str| {
            move |name: &str| match name {
                "TOOLS_FILTER_ENABLED" => Some(enabled.to_string()),
                "TOOLS_FILTER_PROFILE" => Some(profile.to_string()),
                "TOOLS_FILTER_MODE" => Some("exclude".to_string()),
                "TOOLS_FILTER_TOOLS" => Some("whois, send_message".to_string()),
                _ => None,
            }
        };
        assert_eq!(ToolFilter::from_env(&env("minimal", "false")), Ok(ToolFilter::Full));
        assert_eq!(ToolFilter::from_env(&env("minimal", "true")), Ok(ToolFilter::Minimal));
        assert_eq!(ToolFilter::from_env(&env("bogus", "true")), Ok(ToolFilter::Full));
        assert_eq!(
            ToolFilter::from_env(&env("custom", "true")),
            Ok(ToolFilter::Custom {
                clusters: vec![],
                tools: vec!["whois".into(), "send_message".into()],
                exclude: true
            })
        );
    }
}
