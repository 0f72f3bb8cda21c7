//! Progress of long operator commands (saving and restoring states, rebuilding the archive,
//! importing, backing up and restoring backups):
//! a bar on stderr when it is a terminal, nothing at all when it is not, so logs, pipes and
//! scripts see only the command's own output.

use std::io::IsTerminal as _;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar counting items (files, messages); hidden unless stderr is a terminal. It is cleared
/// when dropped, so the lines printed after it start on a clean line.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar named `what` over `total` items (0 when not known yet: [`Progress::update`] sets
    /// it).
    pub fn new(what: &'static str, total: usize) -> Self {
        if !std::io::stderr().is_terminal() {
            return Self { bar: ProgressBar::hidden() };
        }
        let bar = ProgressBar::new(total as u64).with_message(what);
        if let Ok(style) =
            ProgressStyle::with_template("{msg} [{bar:30}] {human_pos}/{human_len} ({elapsed})")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        Self { bar }
    }

    /// A spinner for one step whose size is unknown (a backup, a restore), saying `what` is
    /// being done; hidden unless stderr is a terminal, cleared when dropped.
    pub fn spinner(what: String) -> Self {
        if !std::io::stderr().is_terminal() {
            return Self { bar: ProgressBar::hidden() };
        }
        let bar = ProgressBar::new_spinner().with_message(what);
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        Self { bar }
    }

    /// One more item done.
    pub fn step(&self) {
        self.bar.inc(1);
    }

    /// `done` of `total` items done (the form the core's maintenance reports in).
    pub fn update(&self, done: usize, total: usize) {
        self.bar.set_length(total as u64);
        self.bar.set_position(done as u64);
    }

    /// `more` items to do than said so far.
    pub fn grow(&self, more: usize) {
        self.bar.inc_length(more as u64);
    }

    /// Starts counting again from zero over `total` items (a copy begun anew).
    pub fn restart(&self, total: usize) {
        self.update(0, total);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
