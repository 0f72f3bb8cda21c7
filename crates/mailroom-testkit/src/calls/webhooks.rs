//! Builders of the webhook tools' calls.

use super::tool_call;

tool_call! {
    /// A `register_webhook` call: an endpoint every delivery in a project is posted to.
    RegisterWebhookCall => "register_webhook";
    /// A webhook of every recipient in `project_key` posting to `url`.
    new(project_key: &str, url: &str);
    /// Only this agent's deliveries.
    agent(agent_name: &str);
    /// The signing secret (`whsec_…`) instead of a generated one.
    secret(secret: &str);
}

tool_call! {
    /// A `webhook_deliveries` call: a project's deliveries not delivered, by default.
    DeliveriesCall => "webhook_deliveries";
    /// The deliveries of every webhook of `project_key`.
    new(project_key: &str);
    /// The deliveries of this agent's webhooks instead of the project-wide ones.
    agent(agent_name: &str);
    /// Only this webhook's.
    webhook(webhook_id: i64);
    /// `undelivered`, `pending`, `failed`, `delivered` or `all`.
    status(status: &str);
}
