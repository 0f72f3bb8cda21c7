//! Builders for the contact tools: an agent's contact policy, a contact request and its
//! answer.

use super::tool_call;

tool_call! {
    /// A `set_contact_policy` call.
    PolicyCall => "set_contact_policy";
    /// Sets the contact policy of `agent_name` in `project_key` to `policy` (`open`, `auto`,
    /// `contacts_only` or `block_all`).
    new(project_key: &str, agent_name: &str, policy: &str);
    /// The agent's registration token, when tool authentication is on.
    token(registration_token: &str);
}

tool_call! {
    /// A `request_contact` call: one agent asks another for a contact link.
    ContactRequestCall => "request_contact";
    /// `from_agent` in `project_key` asks `to_agent`, in the same project until
    /// [`Self::to_project`] names another.
    new(project_key: &str, from_agent: &str, to_agent: &str);
    /// The project `to_agent` is registered in.
    to_project(to_project: &str);
}

tool_call! {
    /// A `respond_contact` call: the asked agent accepts or declines a contact request.
    ContactResponseCall => "respond_contact";
    /// `to_agent` in `project_key` answers `from_agent`'s request: `accept` or decline.
    new(project_key: &str, to_agent: &str, from_agent: &str, accept: bool);
    /// The project `from_agent` is registered in.
    from_project(from_project: &str);
}
