//! The `format` choice of tools and resources (docs/compat/tools.md §1.3): JSON, or the result
//! encoded as TOON inside a `{format, data, meta}` envelope. Applied centrally by the
//! dispatcher, so every tool and resource honours it the same way.

use mailroom_core::model::toon;
use serde_json::{Value, json};

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    Json,
    Toon,
}

impl OutputFormat {
    /// Reads a format name with the reference's aliases; `None` for the "use the server
    /// default" spellings (`""`, `auto`, `default`, `none`, `null`), an error naming the
    /// value otherwise.
    pub fn parse(raw: &str) -> Result<Option<Self>, String> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "" | "auto" | "default" | "none" | "null" => Ok(None),
            "json" | "application/json" | "text/json" => Ok(Some(Self::Json)),
            "toon" | "application/toon" | "text/toon" => Ok(Some(Self::Toon)),
            _ => Err(format!("Invalid format '{}'. Use 'json' or 'toon'.", raw.trim())),
        }
    }

    /// The name used in envelopes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::Toon => "toon",
        }
    }
}

/// Reads the `format` argument of a tool call: absent or null means the default.
pub fn from_argument(value: Option<&Value>) -> Result<Option<OutputFormat>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => OutputFormat::parse(text),
        Some(other) => Err(format!("Invalid format {other}. Use 'json' or 'toon'.")),
    }
}

/// Applies the chosen format to a result: JSON is returned as is; TOON wraps the encoded
/// text in the reference's envelope. `requested` is what the caller asked for (`None`: the
/// server default applied).
pub fn apply(value: Value, requested: Option<OutputFormat>, default: OutputFormat) -> Value {
    let chosen = requested.unwrap_or(default);
    if chosen == OutputFormat::Json {
        return value;
    }
    json!({
        "format": "toon",
        "data": toon::encode(&value),
        "meta": {
            "requested": chosen.name(),
            "source": if requested.is_some() { "param" } else { "default" },
            "encoder": toon::ENCODER_NAME,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_and_invalid_names() {
        for (raw, expected) in [
            ("json", Some(OutputFormat::Json)),
            ("application/json", Some(OutputFormat::Json)),
            ("text/json", Some(OutputFormat::Json)),
            (" TOON ", Some(OutputFormat::Toon)),
            ("application/toon", Some(OutputFormat::Toon)),
            ("text/toon", Some(OutputFormat::Toon)),
            ("", None),
            ("auto", None),
            ("default", None),
            ("none", None),
            ("null", None),
        ] {
            assert_eq!(OutputFormat::parse(raw), Ok(expected), "{raw}");
        }
        assert_eq!(
            OutputFormat::parse("xml"),
            Err("Invalid format 'xml'. Use 'json' or 'toon'.".to_string())
        );
    }

    #[test]
    fn toon_wraps_the_encoded_result() {
        let wrapped = apply(json!({"a": 1}), Some(OutputFormat::Toon), OutputFormat::Json);
        assert_eq!(
            wrapped,
            json!({"format": "toon", "data": "a: 1",
                "meta": {"requested": "toon", "source": "param", "encoder": "mailroom-toon"}})
        );
        assert_eq!(apply(json!([1]), None, OutputFormat::Json), json!([1]));
        assert_eq!(apply(json!([1]), None, OutputFormat::Toon)["meta"]["source"], "default");
    }
}
