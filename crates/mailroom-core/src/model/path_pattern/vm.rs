//! The instruction set patterns compile to, and the Pike VM that runs it: a set of threads
//! that advance together one character at a time, so a match costs O(path × pattern).

/// One instruction of a compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Inst {
    /// This exact character.
    Char(char),
    /// Any character but `/` (`[^/]`).
    NotSlash,
    /// Any character but a newline (regex `.`).
    Any,
    /// A character class; `negated` classes match `/` too, as in the reference's regex.
    Class { ranges: Vec<(char, char)>, negated: bool },
    /// Continue at both targets.
    Split(usize, usize),
    /// Continue at the target.
    Jump(usize),
    /// The whole path matched.
    Match,
}

/// Runs the program over the whole of `text` (anchored at both ends) as a Pike VM. The
/// thread lists are kept per OS thread and reused, so a run allocates nothing.
pub(super) fn run(insts: &[Inst], text: &str) -> bool {
    thread_local! {
        static SCRATCH: std::cell::RefCell<(Threads, Threads)> =
            std::cell::RefCell::new((Threads::default(), Threads::default()));
    }
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut pair) => {
            let (current, next) = &mut *pair;
            run_with(insts, text, current, next)
        }
        // Only reachable if a run were ever nested in another on one thread.
        Err(_) => run_with(insts, text, &mut Threads::default(), &mut Threads::default()),
    })
}

fn run_with(insts: &[Inst], text: &str, current: &mut Threads, next: &mut Threads) -> bool {
    current.reset(insts.len());
    next.reset(insts.len());
    current.add(insts, 0);
    for c in text.chars() {
        if current.list.is_empty() {
            return false;
        }
        next.clear();
        for &pc in &current.list {
            let advances = match &insts[pc] {
                Inst::Char(expected) => *expected == c,
                Inst::NotSlash => c != '/',
                Inst::Any => c != '\n',
                Inst::Class { ranges, negated } => {
                    ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated
                }
                Inst::Split(..) | Inst::Jump(_) | Inst::Match => false,
            };
            if advances {
                next.add(insts, pc + 1);
            }
        }
        std::mem::swap(current, next);
    }
    current.list.iter().any(|&pc| insts[pc] == Inst::Match)
}

/// The set of live threads (program counters) at one position, without duplicates. A pc is
/// in the set when its stamp equals the current generation, so clearing is O(1).
#[derive(Default)]
struct Threads {
    /// Threads waiting on a character (or at `Match`).
    list: Vec<usize>,
    /// Per pc, the generation in which it was last added (splits and jumps included).
    stamp: Vec<u32>,
    generation: u32,
}

impl Threads {
    /// Prepares for a program of `len` instructions.
    fn reset(&mut self, len: usize) {
        if self.stamp.len() < len {
            self.stamp.resize(len, 0);
        }
        self.clear();
    }

    fn clear(&mut self) {
        self.list.clear();
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            // Wrapped: old stamps could look current.
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.generation = 1;
        }
    }

    /// Adds `pc` and everything reachable from it without consuming a character.
    fn add(&mut self, insts: &[Inst], pc: usize) {
        if self.stamp[pc] == self.generation {
            return;
        }
        self.stamp[pc] = self.generation;
        match insts[pc] {
            Inst::Split(a, b) => {
                self.add(insts, a);
                self.add(insts, b);
            }
            Inst::Jump(target) => self.add(insts, target),
            _ => self.list.push(pc),
        }
    }
}
