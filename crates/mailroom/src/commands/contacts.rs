//! `mailroom contacts`: an agent's contact links and their states (list_contacts).

use anyhow::Result;
use clap::Args;
use serde_json::json;

use super::output::{self, fields, items};
use super::target::{AsAgent, Common, Proof};

/// `mailroom contacts`.
#[derive(Args, Debug)]
pub struct ContactsArgs {
    #[command(flatten)]
    who: AsAgent,
    #[command(flatten)]
    proof: Proof,
    #[command(flatten)]
    common: Common,
}

pub fn run(args: ContactsArgs) -> Result<()> {
    let backend = args.common.backend()?;
    let call = json!({"project_key": args.who.project()?, "agent_name": args.who.agent()?,
        "registration_token": args.proof.token(&args.who, &args.common)?});
    let listed = backend.call_tool("list_contacts", call)?;
    output::print(args.common.json, &listed, |v| {
        let rows = items(v)
            .iter()
            .map(|c| fields(c, &["to", "status", "reason", "updated_ts", "expires_ts"]))
            .collect();
        output::table(&["agent", "status", "reason", "updated", "expires"], rows)
    });
    Ok(())
}
