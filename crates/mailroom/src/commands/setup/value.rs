//! The entries `mailroom setup` writes, in one neutral shape that keeps its keys' order and
//! becomes a JSON syntax-tree value or a TOML item; and the comparison that makes setup
//! idempotent (an entry equal in meaning to the one it would write is left as it is).

use jsonc_parser::cst::CstInputValue;

/// A configuration value as setup writes it.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Str(String),
    Int(i64),
    Bool(bool),
    List(Vec<Value>),
    /// Keys in the order they are written.
    Map(Vec<(String, Value)>),
}

impl Value {
    /// A map from `(key, value)` pairs, in that order.
    pub fn map<const N: usize>(pairs: [(&str, Value); N]) -> Self {
        Self::Map(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }

    /// A list of strings.
    pub fn strings<S: AsRef<str>>(items: &[S]) -> Self {
        Self::List(items.iter().map(|s| Self::Str(s.as_ref().to_string())).collect())
    }

    /// This map with `key` set to `value` (appended when new); unchanged when not a map.
    #[must_use]
    pub fn with(mut self, key: &str, value: Value) -> Self {
        if let Self::Map(pairs) = &mut self {
            match pairs.iter_mut().find(|(k, _)| k == key) {
                Some((_, v)) => *v = value,
                None => pairs.push((key.to_string(), value)),
            }
        }
        self
    }

    /// This map followed by `other`'s keys (each set as [`Value::with`] does).
    #[must_use]
    pub fn merged(self, other: Value) -> Self {
        match other {
            Self::Map(pairs) => pairs.into_iter().fold(self, |map, (k, v)| map.with(&k, v)),
            _ => self,
        }
    }

    /// As a node for the JSON syntax tree.
    pub fn to_cst(&self) -> CstInputValue {
        match self {
            Self::Str(s) => CstInputValue::String(s.clone()),
            Self::Int(n) => CstInputValue::Number(n.to_string()),
            Self::Bool(b) => CstInputValue::Bool(*b),
            Self::List(items) => CstInputValue::Array(items.iter().map(Self::to_cst).collect()),
            Self::Map(pairs) => {
                CstInputValue::Object(pairs.iter().map(|(k, v)| (k.clone(), v.to_cst())).collect())
            }
        }
    }

    /// As JSON, for comparing with what a file holds (key order aside).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Self::Str(s) => serde_json::Value::String(s.clone()),
            Self::Int(n) => serde_json::Value::from(*n),
            Self::Bool(b) => serde_json::Value::Bool(*b),
            Self::List(items) => {
                serde_json::Value::Array(items.iter().map(Self::to_json).collect())
            }
            Self::Map(pairs) => serde_json::Value::Object(
                pairs.iter().map(|(k, v)| (k.clone(), v.to_json())).collect(),
            ),
        }
    }

    /// As a TOML value; maps become inline tables (a table of their own is made by the
    /// TOML editor where one reads better).
    pub fn to_toml(&self) -> toml_edit::Value {
        match self {
            Self::Str(s) => s.as_str().into(),
            Self::Int(n) => (*n).into(),
            Self::Bool(b) => (*b).into(),
            Self::List(items) => {
                let mut array = toml_edit::Array::new();
                for item in items {
                    array.push(item.to_toml());
                }
                toml_edit::Value::Array(array)
            }
            Self::Map(pairs) => {
                let mut table = toml_edit::InlineTable::new();
                for (k, v) in pairs {
                    table.insert(k, v.to_toml());
                }
                toml_edit::Value::InlineTable(table)
            }
        }
    }
}

/// A TOML item read as JSON, for comparing with an entry (`None` for dates, which setup
/// never writes).
pub fn toml_to_json(item: &toml_edit::Item) -> Option<serde_json::Value> {
    match item {
        toml_edit::Item::Value(value) => toml_value_to_json(value),
        toml_edit::Item::Table(table) => {
            let mut map = serde_json::Map::new();
            for (k, v) in table.iter() {
                map.insert(k.to_string(), toml_to_json(v)?);
            }
            Some(serde_json::Value::Object(map))
        }
        toml_edit::Item::ArrayOfTables(_) | toml_edit::Item::None => None,
    }
}

fn toml_value_to_json(value: &toml_edit::Value) -> Option<serde_json::Value> {
    use toml_edit::Value as T;
    Some(match value {
        T::String(s) => serde_json::Value::String(s.value().clone()),
        T::Integer(n) => serde_json::Value::from(*n.value()),
        T::Float(f) => serde_json::Value::from(*f.value()),
        T::Boolean(b) => serde_json::Value::Bool(*b.value()),
        T::Datetime(_) => return None,
        T::Array(array) => {
            serde_json::Value::Array(array.iter().map(toml_value_to_json).collect::<Option<_>>()?)
        }
        T::InlineTable(table) => {
            let mut map = serde_json::Map::new();
            for (k, v) in table.iter() {
                map.insert(k.to_string(), toml_value_to_json(v)?);
            }
            serde_json::Value::Object(map)
        }
    })
}
