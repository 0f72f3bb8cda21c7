//! Compilation: pathspec's `GitWildMatchPattern.pattern_to_regex`, emitted as instructions
//! for the VM, and the recognition of the common shapes tested without it.

use super::vm::Inst;

/// What a pattern compiled to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Program {
    /// Matches nothing (empty, comment, lone `/`).
    Nothing,
    /// A pattern `pathspec` rejects: matches only this exact string.
    Exact(String),
    /// A wildmatch program, with a literal prefix every matching path starts with and the
    /// longest other literal every matching path contains (cheap rejections before running
    /// it), and a direct test when the program has one of the common shapes.
    Wild { insts: Vec<Inst>, prefix: String, required: String, shape: Shape },
}

/// Common program shapes tested without the VM; each answers exactly as the program would
/// (`tests.rs` checks this against the VM on random patterns and paths). In the regexes
/// below, `.` is any character but a newline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Shape {
    /// None of these: run the VM.
    General,
    /// `L(?:/.*)?` — a literal path and everything beneath it (`docs/a.md`, `/app.py`).
    Path(String),
    /// `L.*` where `L` ends with `/` — everything beneath a directory (`src/**`, `docs/`
    /// anchored).
    Under(String),
    /// `(?:.+/)?[^/]*S(?:/.*)?` when `any_depth` (`*.py`, `**/*.py`), else `D[^/]*S(?:/.*)?`
    /// (`src/*.py`): a name ending in the literal `suffix`, at any depth or directly after the
    /// literal `dir` (empty when `any_depth`).
    StarSuffix { dir: String, suffix: String, any_depth: bool },
}

/// Compiles a stripped, non-empty pattern; `None` when `pathspec` would reject it.
pub(super) fn compile(pattern: &str) -> Option<Program> {
    let mut segments: Vec<&str> = pattern.split('/').collect();
    // Runs of `**` segments mean the same as one.
    segments.dedup_by(|next, prev| *next == "**" && *prev == "**");
    if segments[0].is_empty() {
        // A leading `/` anchors the pattern at the root.
        segments.remove(0);
    } else if (segments.len() == 1 || (segments.len() == 2 && segments[1].is_empty()))
        && segments[0] != "**"
    {
        // A single segment matches at any depth: `name` means `**/name`.
        segments.insert(0, "**");
    }
    if segments.is_empty() {
        return None;
    }
    let is_dir_pattern = segments.last().is_some_and(|s| s.is_empty());
    if is_dir_pattern && segments.len() > 1 {
        // `dir/` means `dir/**`.
        if let Some(last) = segments.last_mut() {
            *last = "**";
        }
    }
    let mut out = Emitter::default();
    let mut need_slash = false;
    let end = segments.len() - 1;
    for (i, segment) in segments.iter().enumerate() {
        if *segment == "**" {
            if i == 0 && i == end {
                // `[^/]+(?:/.*)?`: every path.
                out.push(Inst::NotSlash);
                out.star(&[Inst::NotSlash]);
                out.optional_slash_anything();
            } else if i == 0 {
                // `(?:.+/)?`: any leading directories.
                out.optional(&[Inst::Any], true);
                need_slash = false;
            } else if i == end {
                // `/.*`: everything beneath.
                out.push(Inst::Char('/'));
                out.star(&[Inst::Any]);
            } else {
                // `(?:/.+)?`: zero or more inner directories.
                out.optional(&[Inst::Any], false);
                need_slash = true;
            }
        } else if *segment == "*" {
            if need_slash {
                out.push(Inst::Char('/'));
            }
            out.push(Inst::NotSlash);
            out.star(&[Inst::NotSlash]);
            if i == end {
                out.optional_slash_anything();
            }
            need_slash = true;
        } else {
            if need_slash {
                out.push(Inst::Char('/'));
            }
            segment_glob(segment, &mut out)?;
            if i == end {
                out.optional_slash_anything();
            }
            need_slash = true;
        }
    }
    out.push(Inst::Match);
    out.flush_run();
    let prefix = literal_prefix(&out.insts);
    let shape = shape_of(&out.insts, &prefix);
    // The first run is the prefix when the program starts with it; otherwise it is as good
    // a requirement as any other.
    let skip = usize::from(!prefix.is_empty());
    let required =
        out.runs.iter().skip(skip).max_by_key(|run| run.len()).cloned().unwrap_or_default();
    Some(Program::Wild { insts: out.insts, prefix, required, shape })
}

/// Recognises the [`Shape`]s by rebuilding each candidate program with the emitter and
/// comparing instructions, so a shape is only ever used for exactly the program it stands for.
fn shape_of(insts: &[Inst], prefix: &str) -> Shape {
    let build = |steps: &dyn Fn(&mut Emitter)| {
        let mut out = Emitter::default();
        steps(&mut out);
        out.push(Inst::Match);
        out.insts
    };
    let chars = |out: &mut Emitter, text: &str| text.chars().for_each(|c| out.push(Inst::Char(c)));
    if insts
        == build(&|out| {
            chars(out, prefix);
            out.optional_slash_anything();
        })
    {
        return Shape::Path(prefix.to_string());
    }
    if prefix.ends_with('/')
        && insts
            == build(&|out| {
                chars(out, prefix);
                out.star(&[Inst::Any]);
            })
    {
        return Shape::Under(prefix.to_string());
    }
    for any_depth in [true, false] {
        let dir = if any_depth { "" } else { prefix };
        if any_depth && !prefix.is_empty() {
            continue;
        }
        let head = build(&|out| {
            if any_depth {
                out.optional(&[Inst::Any], true);
            }
            chars(out, dir);
            out.star(&[Inst::NotSlash]);
        });
        // `head` ends with the `Match` the builder appends; the suffix starts where it is.
        let start = head.len() - 1;
        if insts.len() <= start || insts[..start] != head[..start] {
            continue;
        }
        let suffix = literal_prefix(&insts[start..]);
        // A `/` in it (`*a/b`: the literal runs on into the next segment) is another shape.
        if suffix.is_empty() || suffix.contains('/') {
            continue;
        }
        let whole = build(&|out| {
            if any_depth {
                out.optional(&[Inst::Any], true);
            }
            chars(out, dir);
            out.star(&[Inst::NotSlash]);
            chars(out, &suffix);
            out.optional_slash_anything();
        });
        if insts == whole {
            return Shape::StarSuffix { dir: dir.to_string(), suffix, any_depth };
        }
    }
    Shape::General
}

/// pathspec's `_translate_segment_glob`: `*` → `[^/]*`, `?` → `[^/]`, `[...]` a class (an
/// unclosed `[` is literal), `\x` the literal `x`. A dangling `\` is an error.
fn segment_glob(segment: &str, out: &mut Emitter) -> Option<()> {
    let chars: Vec<char> = segment.chars().collect();
    let mut i = 0;
    let mut escape = false;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if escape {
            escape = false;
            out.push(Inst::Char(c));
        } else if c == '\\' {
            escape = true;
        } else if c == '*' {
            out.star(&[Inst::NotSlash]);
        } else if c == '?' {
            out.push(Inst::NotSlash);
        } else if c == '[' {
            match class(&chars, i) {
                Some((inst, next)) => {
                    out.push(inst);
                    i = next;
                }
                None => out.push(Inst::Char('[')),
            }
        } else {
            out.push(Inst::Char(c));
        }
    }
    if escape { None } else { Some(()) }
}

/// A bracket expression starting after the `[` at `start`; `None` when it is never closed.
fn class(chars: &[char], start: usize) -> Option<(Inst, usize)> {
    let mut j = start;
    if j < chars.len() && matches!(chars[j], '!' | '^') {
        j += 1;
    }
    if j < chars.len() && chars[j] == ']' {
        j += 1;
    }
    while j < chars.len() && chars[j] != ']' {
        j += 1;
    }
    if j >= chars.len() {
        return None;
    }
    let mut body = &chars[start..j];
    let negated = matches!(body.first(), Some('!' | '^'));
    if negated {
        body = &body[1..];
    }
    // The body is copied into a regex class, where `a-z` is a range and everything else
    // (backslashes included, which pathspec doubles) is literal.
    let mut ranges = Vec::new();
    let mut k = 0;
    while k < body.len() {
        if k + 2 < body.len() && body[k + 1] == '-' {
            ranges.push((body[k], body[k + 2]));
            k += 3;
        } else {
            ranges.push((body[k], body[k]));
            k += 1;
        }
    }
    Some((Inst::Class { ranges, negated }, j + 1))
}

/// Builds an instruction program; jump targets are absolute indices. It also collects the
/// runs of literal characters emitted at the top level (outside any repetition or option):
/// every path the program matches passes through each, so contains each as a substring.
#[derive(Default)]
struct Emitter {
    insts: Vec<Inst>,
    runs: Vec<String>,
    run: String,
}

impl Emitter {
    /// Appends a top-level instruction.
    fn push(&mut self, inst: Inst) {
        match inst {
            Inst::Char(c) => self.run.push(c),
            _ => self.flush_run(),
        }
        self.insts.push(inst);
    }

    /// Ends the current run of top-level literal characters.
    fn flush_run(&mut self) {
        if !self.run.is_empty() {
            self.runs.push(std::mem::take(&mut self.run));
        }
    }

    /// `(?:body)*`.
    fn star(&mut self, body: &[Inst]) {
        self.flush_run();
        let split = self.insts.len();
        self.insts.push(Inst::Split(split + 1, 0));
        self.insts.extend_from_slice(body);
        self.insts.push(Inst::Jump(split));
        let after = self.insts.len();
        self.insts[split] = Inst::Split(split + 1, after);
    }

    /// `(?:one+/)?` when `slash_after`, else `(?:/one+)?`.
    fn optional(&mut self, one: &[Inst], slash_after: bool) {
        self.flush_run();
        let split = self.insts.len();
        self.insts.push(Inst::Split(split + 1, 0));
        if !slash_after {
            self.insts.push(Inst::Char('/'));
        }
        self.insts.extend_from_slice(one);
        self.star(one);
        if slash_after {
            self.insts.push(Inst::Char('/'));
        }
        let after = self.insts.len();
        self.insts[split] = Inst::Split(split + 1, after);
    }

    /// `(?:/.*)?`: the path itself or anything beneath it.
    fn optional_slash_anything(&mut self) {
        self.flush_run();
        let split = self.insts.len();
        self.insts.push(Inst::Split(split + 1, 0));
        self.insts.push(Inst::Char('/'));
        self.star(&[Inst::Any]);
        let after = self.insts.len();
        self.insts[split] = Inst::Split(split + 1, after);
    }
}

/// The characters every match must start with: the leading run of `Char` instructions.
fn literal_prefix(insts: &[Inst]) -> String {
    insts
        .iter()
        .map_while(|inst| match inst {
            Inst::Char(c) => Some(*c),
            _ => None,
        })
        .collect()
}
