//! register_webhook: an HTTPS endpoint (or loopback HTTP) that is POSTed every delivery of a
//! message to a recipient in the project, or to one agent, the moment it commits (mailroom
//! extension). For a process that must learn of mail without polling or holding an MCP
//! stream open. Requests follow Standard Webhooks (signed with the secret this returns once).

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Register a webhook: every delivery of a message to a recipient in \
     the project (or only to agent_name) is POSTed to url as JSON, signed by the Standard \
     Webhooks rules (webhook-id, webhook-timestamp, webhook-signature headers) and retried with \
     backoff until it is answered with a 2xx. url must be https:// to a public host, or \
     http:// to a loopback address. The result shows the signing secret: keep it, it is not shown again.";

/// Arguments of register_webhook.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Where deliveries are POSTed: https:// to a public host, or http:// to 127.0.0.0/8,
    /// [::1] or localhost.
    url: String,
    /// Only this agent's deliveries; leave out for every recipient in the project.
    #[serde(default)]
    agent_name: Option<String>,
    /// The signing secret, `whsec_` and the base64 of 24 to 64 random bytes; leave out to
    /// have one generated.
    #[serde(default)]
    secret: Option<String>,
    /// A registration token of an agent of the project (needed only when the server requires
    /// authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("register_webhook", DESCRIPTION, |state: AppState, args: Args| async move {
        state.core.register_webhook(args.project_key, args.url, args.agent_name, args.secret).await
    })
}
