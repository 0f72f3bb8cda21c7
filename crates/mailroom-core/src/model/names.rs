//! Agent naming rules: the adjective+noun word lists, validation of caller-supplied names,
//! detection of common naming mistakes, and random name generation.
//!
//! Agent names are memorable `<Adjective><Noun>` pairs such as `BlueLake`. They are compared
//! case-insensitively everywhere, so every check here ignores ASCII case. The reference
//! implementation lower-cases with Python's Unicode-aware `str.lower()`; the only input for
//! which that differs from ASCII folding in a way that matters is U+212A KELVIN SIGN (which
//! Python folds to `k`). We deliberately do not accept it: a name containing it could never
//! survive [`sanitize_agent_name`] anyway.

/// The agent a person writing from the web UI sends as (docs/compat/http.md §7), in every
/// project it writes to.
pub const OVERSEER_NAME: &str = "HumanOverseer";

/// The adjectives of the agent-name vocabulary, in the reference order.
///
/// The order matters only for reproducibility of docs and tests; generation draws uniformly.
pub const ADJECTIVES: &[&str] = &[
    "Red",
    "Orange",
    "Pink",
    "Black",
    "Purple",
    "Blue",
    "Brown",
    "White",
    "Green",
    "Chartreuse",
    "Lilac",
    "Fuchsia",
    "Azure",
    "Amber",
    "Coral",
    "Crimson",
    "Cyan",
    "Gold",
    "Gray",
    "Indigo",
    "Ivory",
    "Jade",
    "Lavender",
    "Magenta",
    "Maroon",
    "Navy",
    "Olive",
    "Pearl",
    "Rose",
    "Ruby",
    "Sage",
    "Scarlet",
    "Silver",
    "Teal",
    "Topaz",
    "Violet",
    "Cobalt",
    "Copper",
    "Bronze",
    "Emerald",
    "Sapphire",
    "Turquoise",
    "Sunny",
    "Misty",
    "Foggy",
    "Stormy",
    "Windy",
    "Frosty",
    "Dusty",
    "Hazy",
    "Cloudy",
    "Rainy",
    "Swift",
    "Quiet",
    "Bold",
    "Calm",
    "Bright",
    "Dark",
    "Wild",
    "Silent",
    "Gentle",
    "Rustic",
];

/// The nouns of the agent-name vocabulary, in the reference order.
pub const NOUNS: &[&str] = &[
    "Stone",
    "Lake",
    "Dog",
    "Creek",
    "Pond",
    "Cat",
    "Bear",
    "Mountain",
    "Hill",
    "Snow",
    "Castle",
    "River",
    "Forest",
    "Valley",
    "Canyon",
    "Meadow",
    "Prairie",
    "Desert",
    "Island",
    "Cliff",
    "Cave",
    "Glacier",
    "Waterfall",
    "Spring",
    "Stream",
    "Reef",
    "Dune",
    "Ridge",
    "Peak",
    "Gorge",
    "Marsh",
    "Brook",
    "Glen",
    "Grove",
    "Hollow",
    "Basin",
    "Cove",
    "Bay",
    "Harbor",
    "Fox",
    "Wolf",
    "Hawk",
    "Eagle",
    "Owl",
    "Deer",
    "Elk",
    "Moose",
    "Falcon",
    "Raven",
    "Heron",
    "Crane",
    "Otter",
    "Beaver",
    "Badger",
    "Finch",
    "Robin",
    "Sparrow",
    "Lynx",
    "Puma",
    "Tower",
    "Bridge",
    "Forge",
    "Mill",
    "Barn",
    "Gate",
    "Anchor",
    "Lantern",
    "Beacon",
    "Compass",
];

/// Coding-agent programs that callers often pass as their agent name by mistake.
const PROGRAM_NAMES: &[&str] = &[
    "claude-code",
    "claude",
    "codex-cli",
    "codex",
    "cursor",
    "windsurf",
    "cline",
    "aider",
    "copilot",
    "github-copilot",
    "gemini-cli",
    "gemini",
    "opencode",
    "vscode",
    "neovim",
    "vim",
    "emacs",
    "zed",
    "continue",
];

/// Substrings that betray a model name (`gpt-4o`, `claude-opus-4`, ...).
const MODEL_NAME_FRAGMENTS: &[&str] = &[
    "gpt-",
    "gpt4",
    "gpt3",
    "claude-",
    "opus",
    "sonnet",
    "haiku",
    "gemini-",
    "llama",
    "mistral",
    "codestral",
    "o1-",
    "o3-",
];

/// Values that mean "everybody"; agent mail has no implicit broadcast by name.
const BROADCAST_NAMES: &[&str] = &["all", "*", "everyone", "broadcast", "@all", "@everyone"];

/// Role-like suffixes that show the caller described the agent's job instead of naming it.
const DESCRIPTIVE_SUFFIXES: &[&str] = &[
    "agent",
    "bot",
    "assistant",
    "helper",
    "manager",
    "coordinator",
    "developer",
    "engineer",
    "migrator",
    "refactorer",
    "fixer",
    "harmonizer",
    "integrator",
    "optimizer",
    "analyzer",
    "worker",
];

/// The longest name [`sanitize_agent_name`] keeps, matching the database column.
const MAX_AGENT_NAME_CHARS: usize = 128;

/// Returns the word of `words` equal to `text` ignoring ASCII case.
fn find_word(words: &[&'static str], text: &str) -> Option<&'static str> {
    words.iter().copied().find(|word| word.eq_ignore_ascii_case(text))
}

/// Splits `name` into its canonical adjective and noun, ignoring ASCII case.
///
/// Trying each adjective as a prefix costs at most 62 short comparisons and allocates nothing,
/// which is why it beats building a 4278-entry set on every call.
fn split_adjective_noun(name: &str) -> Option<(&'static str, &'static str)> {
    ADJECTIVES.iter().copied().find_map(|adjective| {
        let head = name.get(..adjective.len())?;
        if !head.eq_ignore_ascii_case(adjective) {
            return None;
        }
        let noun = find_word(NOUNS, &name[adjective.len()..])?;
        Some((adjective, noun))
    })
}

/// Tells whether `name` is an adjective+noun pair from the vocabulary, in any letter case.
pub fn is_valid_adjective_noun(name: &str) -> bool {
    split_adjective_noun(name).is_some()
}

/// Returns the canonical spelling (`"bluelake"` → `"BlueLake"`) of a valid adjective+noun name.
///
/// Names are stored as the caller spelled them but compared case-insensitively, so callers use
/// this to compare two spellings or to present a tidy name; `None` means `name` is not valid.
pub fn canonical_adjective_noun(name: &str) -> Option<String> {
    split_adjective_noun(name).map(|(adjective, noun)| format!("{adjective}{noun}"))
}

/// Cleans a caller-supplied agent name: trims, drops every character outside `[A-Za-z0-9]`
/// and keeps at most 128 characters; `None` when nothing is left.
pub fn sanitize_agent_name(raw: &str) -> Option<String> {
    let cleaned: String =
        raw.trim().chars().filter(char::is_ascii_alphanumeric).take(MAX_AGENT_NAME_CHARS).collect();
    (!cleaned.is_empty()).then_some(cleaned)
}

/// Tells whether `name` is usable verbatim as an explicit agent id such as `cc-0` or `worker_42`.
///
/// The id must match `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`, contain at least one of `-`, `_`,
/// `.` (which is what distinguishes it from a plain word), and must not look like a program or
/// model name, because `claude-code` or `gpt-4o` are almost always a caller confusing fields.
/// Surrounding whitespace is not accepted; callers trim first, as the reference does.
pub fn is_valid_explicit_id(name: &str) -> bool {
    super::thread_id::is_valid_thread_id(name)
        && name.contains(['-', '_', '.'])
        && !is_program_name(name)
        && !looks_like_model_name(name)
}

/// Tells whether `s` is (ignoring case and surrounding whitespace) a known coding-agent program.
pub fn is_program_name(s: &str) -> bool {
    let lowered = s.trim().to_lowercase();
    PROGRAM_NAMES.contains(&lowered.as_str())
}

/// Tells whether `s` contains a fragment typical of model names, such as `gpt-` or `sonnet`.
pub fn looks_like_model_name(s: &str) -> bool {
    let lowered = s.trim().to_lowercase();
    MODEL_NAME_FRAGMENTS.iter().any(|fragment| lowered.contains(fragment))
}

/// A recognisable reason why a string is not an agent name, used to give a targeted error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NameMistake {
    /// The value is a program such as `claude-code`; it belongs in the `program` field.
    ProgramName,
    /// The value is a model such as `gpt-4o`; it belongs in the `model` field.
    ModelName,
    /// The value is an e-mail address.
    Email,
    /// The value asks for everybody (`all`, `*`, `@everyone`, ...).
    Broadcast,
    /// The value describes a role (`BackendWorker`) instead of naming an agent.
    DescriptiveName,
    /// The value looks like a login name, typically `$USER` leaking from a hook script.
    UnixUsername,
}

impl NameMistake {
    /// The stable error type clients receive; these strings are part of the public contract.
    pub fn error_type(&self) -> &'static str {
        match self {
            NameMistake::ProgramName => "PROGRAM_NAME_AS_AGENT",
            NameMistake::ModelName => "MODEL_NAME_AS_AGENT",
            NameMistake::Email => "EMAIL_AS_AGENT",
            NameMistake::Broadcast => "BROADCAST_ATTEMPT",
            NameMistake::DescriptiveName => "DESCRIPTIVE_NAME",
            NameMistake::UnixUsername => "UNIX_USERNAME_AS_AGENT",
        }
    }

    /// A short English explanation of the mistake and how to fix it, quoting `name`.
    pub fn explain(&self, name: &str) -> String {
        let rule = "Agent names are adjective+noun pairs such as 'BlueLake'.";
        match self {
            NameMistake::ProgramName => format!(
                "'{name}' looks like a program name, not an agent name. {rule} Put the program \
                 in the 'program' parameter and omit 'name' to get a generated agent name."
            ),
            NameMistake::ModelName => format!(
                "'{name}' looks like a model name, not an agent name. {rule} Put the model in \
                 the 'model' parameter and omit 'name' to get a generated agent name."
            ),
            NameMistake::Email => format!(
                "'{name}' looks like an e-mail address, not an agent name. {rule} Address \
                 recipients by their agent name."
            ),
            NameMistake::Broadcast => format!(
                "'{name}' looks like a broadcast. Messages cannot be addressed to everybody by \
                 name; list the recipient agent names explicitly."
            ),
            NameMistake::DescriptiveName => format!(
                "'{name}' looks like a description of a role, not an agent name. {rule} Omit \
                 'name' to get a generated one."
            ),
            NameMistake::UnixUsername => format!(
                "'{name}' looks like a Unix user name (perhaps $USER), not an agent name. \
                 {rule} Use the name register_agent returned, or list the project's agents."
            ),
        }
    }
}

/// Detects the most likely naming mistake behind `name`, checking in the reference order
/// (program, model, e-mail, broadcast, descriptive, Unix user name) so the same input always
/// yields the same error type as the reference.
pub fn detect_name_mistake(name: &str) -> Option<NameMistake> {
    if is_program_name(name) {
        Some(NameMistake::ProgramName)
    } else if looks_like_model_name(name) {
        Some(NameMistake::ModelName)
    } else if looks_like_email(name) {
        Some(NameMistake::Email)
    } else if looks_like_broadcast(name) {
        Some(NameMistake::Broadcast)
    } else if looks_like_descriptive_name(name) {
        Some(NameMistake::DescriptiveName)
    } else if looks_like_unix_username(name) {
        Some(NameMistake::UnixUsername)
    } else {
        None
    }
}

/// An `@` followed (after the last `@`) by a dot; `Name@project` addresses have no dot.
fn looks_like_email(name: &str) -> bool {
    name.rsplit_once('@').is_some_and(|(_, domain)| domain.contains('.'))
}

fn looks_like_broadcast(name: &str) -> bool {
    let lowered = name.trim().to_lowercase();
    BROADCAST_NAMES.contains(&lowered.as_str())
}

/// The reference does not trim here, so `"helper "` is not descriptive; we keep that.
fn looks_like_descriptive_name(name: &str) -> bool {
    let lowered = name.to_lowercase();
    DESCRIPTIVE_SUFFIXES.iter().any(|suffix| lowered.ends_with(suffix))
}

/// Mirrors Python's `v.islower() and v.isalnum() and 2 <= len(v) <= 16` on the trimmed value,
/// excluding bare vocabulary words such as `lake`.
fn looks_like_unix_username(name: &str) -> bool {
    let trimmed = name.trim();
    let length = trimmed.chars().count();
    let all_alphanumeric = trimmed.chars().all(char::is_alphanumeric);
    let has_lowercase = trimmed.chars().any(char::is_lowercase);
    let has_uppercase = trimmed.chars().any(char::is_uppercase);
    (2..=16).contains(&length)
        && all_alphanumeric
        && has_lowercase
        && !has_uppercase
        && find_word(ADJECTIVES, trimmed).is_none()
        && find_word(NOUNS, trimmed).is_none()
}

/// Draws a uniformly-enough distributed index below `bound` from the OS random source.
///
/// Agent names are not secrets and uniqueness is checked against the database by the caller, so
/// when the OS source fails (practically never) the sub-second clock is a good enough fallback
/// and is preferable to failing registration.
fn random_index(bound: usize) -> usize {
    let value = getrandom::u32().unwrap_or_else(|_| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.subsec_nanos())
            .unwrap_or(0)
    });
    usize::try_from(value).unwrap_or(0) % bound
}

/// Returns a random adjective+noun name in canonical spelling, such as `SwiftFalcon`.
pub fn random_adjective_noun() -> String {
    let adjective = ADJECTIVES[random_index(ADJECTIVES.len())];
    let noun = NOUNS[random_index(NOUNS.len())];
    format!("{adjective}{noun}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compares what a rule returned for `input` with what we expected, naming the input.
    fn check<T: PartialEq + std::fmt::Debug>(input: &str, actual: T, expected: T) {
        assert_eq!(actual, expected, "input: {input:?}");
    }

    #[test]
    fn word_lists_match_the_reference_sizes_and_combine_uniquely() {
        assert_eq!(ADJECTIVES.len(), 62);
        assert_eq!(NOUNS.len(), 69);
        let mut all = std::collections::HashSet::new();
        for adjective in ADJECTIVES {
            for noun in NOUNS {
                all.insert(format!("{adjective}{noun}").to_ascii_lowercase());
            }
        }
        assert_eq!(all.len(), 62 * 69, "two pairs spell the same name");
    }

    #[test]
    fn every_pair_is_valid_and_canonicalises_to_itself() {
        for adjective in ADJECTIVES {
            for noun in NOUNS {
                let name = format!("{adjective}{noun}");
                check(&name, canonical_adjective_noun(&name.to_uppercase()), Some(name.clone()));
            }
        }
    }

    #[test]
    fn adjective_noun_validation() {
        let cases = [
            ("BlueLake", true),
            ("bluelake", true),
            ("BLUELAKE", true),
            ("bLuElAkE", true),
            ("GreenCastle", true),
            ("RusticCompass", true),
            ("Blue", false),
            ("Lake", false),
            ("BlueLakes", false),
            ("LakeBlue", false),
            ("Blue Lake", false),
            ("", false),
            ("BlueLaKe", true),
            ("BlueLa\u{212A}e", false),
            ("Bluélake", false),
        ];
        for (input, expected) in cases {
            check(input, is_valid_adjective_noun(input), expected);
        }
    }

    #[test]
    fn canonical_spelling() {
        let cases = [
            ("bluelake", Some("BlueLake")),
            ("SWIFTFALCON", Some("SwiftFalcon")),
            ("redstone", Some("RedStone")),
            ("redstones", None),
            ("", None),
        ];
        for (input, expected) in cases {
            check(input, canonical_adjective_noun(input).as_deref(), expected);
        }
    }

    #[test]
    fn sanitising() {
        let long = "a".repeat(200);
        let cases = [
            ("  BlueLake  ", Some("BlueLake".to_owned())),
            ("Blue-Lake!", Some("BlueLake".to_owned())),
            ("blue lake 42", Some("bluelake42".to_owned())),
            ("   ", None),
            ("-_-", None),
            ("éBlue", Some("Blue".to_owned())),
            (long.as_str(), Some("a".repeat(128))),
        ];
        for (input, expected) in cases {
            check(input, sanitize_agent_name(input), expected);
        }
    }

    #[test]
    fn explicit_ids() {
        let too_long = format!("a-{}", "b".repeat(127));
        let longest = format!("a-{}", "b".repeat(126));
        let cases = [
            ("cc-0", true),
            ("alpha-one", true),
            ("worker_42", true),
            ("v1.2", true),
            ("BlueLake", false),
            ("-leading", false),
            ("_leading", false),
            ("has space-x", false),
            ("claude-code", false),
            ("Codex-CLI", false),
            ("gpt-4o", false),
            ("my-sonnet-box", false),
            ("", false),
            (" cc-0", false),
            (longest.as_str(), true),
            (too_long.as_str(), false),
        ];
        for (input, expected) in cases {
            check(input, is_valid_explicit_id(input), expected);
        }
    }

    #[test]
    fn program_and_model_names() {
        let cases = [
            ("claude-code", true, true),
            (" Claude ", true, false),
            ("cursor", true, false),
            ("CONTINUE", true, false),
            ("gpt-4o", false, true),
            ("GPT4", false, true),
            ("o3-mini", false, true),
            ("llama3", false, true),
            ("BlueLake", false, false),
            ("zedd", false, false),
        ];
        for (input, program, model) in cases {
            check(input, (is_program_name(input), looks_like_model_name(input)), (program, model));
        }
    }

    #[test]
    fn mistake_detection_follows_the_reference_order() {
        use NameMistake::*;
        let cases = [
            ("claude-code", Some(ProgramName)),
            ("Claude", Some(ProgramName)),
            ("gemini", Some(ProgramName)),
            ("gemini-2.5-pro", Some(ModelName)),
            ("gpt-4o", Some(ModelName)),
            ("alice@example.com", Some(Email)),
            ("BlueLake@backend", None),
            ("a@b@c.d", Some(Email)),
            ("a.b@c", None),
            ("all", Some(Broadcast)),
            (" Everyone ", Some(Broadcast)),
            ("@all", Some(Broadcast)),
            ("*", Some(Broadcast)),
            ("BackendHarmonizer", Some(DescriptiveName)),
            ("test-bot", Some(DescriptiveName)),
            ("helper ", Some(UnixUsername)),
            ("Helper", Some(DescriptiveName)),
            ("ubuntu", Some(UnixUsername)),
            ("root", Some(UnixUsername)),
            ("dev42", Some(UnixUsername)),
            ("lake", None),
            ("blue", None),
            ("x", None),
            ("abcdefghijklmnopq", None),
            ("1234", None),
            ("BlueLake", None),
            ("FooBar123", None),
            ("", None),
        ];
        for (input, expected) in cases {
            check(input, detect_name_mistake(input), expected);
        }
    }

    #[test]
    fn error_types_and_explanations() {
        use NameMistake::*;
        let cases = [
            (ProgramName, "PROGRAM_NAME_AS_AGENT", "program name"),
            (ModelName, "MODEL_NAME_AS_AGENT", "model name"),
            (Email, "EMAIL_AS_AGENT", "e-mail"),
            (Broadcast, "BROADCAST_ATTEMPT", "broadcast"),
            (DescriptiveName, "DESCRIPTIVE_NAME", "role"),
            (UnixUsername, "UNIX_USERNAME_AS_AGENT", "Unix user name"),
        ];
        for (mistake, error_type, phrase) in cases {
            let text = mistake.explain("xyz");
            check(error_type, mistake.error_type(), error_type);
            check(error_type, text.starts_with("'xyz' looks like"), true);
            check(error_type, text.contains(phrase), true);
        }
    }

    #[test]
    fn random_names_are_valid_and_canonical() {
        for _ in 0..200 {
            let name = random_adjective_noun();
            check(&name, canonical_adjective_noun(&name), Some(name.clone()));
        }
    }
}
