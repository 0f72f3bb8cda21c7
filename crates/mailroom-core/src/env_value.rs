//! How the reference spells values in its environment variables, shared by every settings
//! reader (`config`, `llm`, and the server's through `config::parse_bool`). A leaf: it imports
//! nothing of the crate, so the readers depend on it and never on each other.

/// Parses a boolean the way the reference does (`1,true,t,yes,y` / `0,false,f,no,n`).
pub fn parse_bool(name: &str, value: &str) -> Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "t" | "yes" | "y" | "on" => Ok(true),
        "0" | "false" | "f" | "no" | "n" | "off" | "" => Ok(false),
        _ => Err(format!("{name} must be a boolean (true/false), got {value:?}")),
    }
}
