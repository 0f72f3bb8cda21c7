//! Which send each notification answers. A notification names an inbox, not a message, and a
//! server may fold two messages into one notification, so the load keeps at most one message
//! outstanding per agent: a notification for an agent is then its one outstanding message's.
//! Sends pick a random agent among those with none outstanding. Nothing is dropped silently:
//! a notification that does not come within the deadline after the send's reply is a miss
//! (and the agent leaves the draw, so a late one cannot be taken for its next message's), and
//! one that comes for an agent with nothing outstanding is counted as unexpected or late.
//!
//! Times are `Duration`s since an origin, so the matching is tested without a clock.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::scenario::Choice;
use crate::stats::{Recorder, Summary};

/// Where one agent stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Agent {
    /// Nothing outstanding: a send may pick it.
    Free,
    /// A message was sent to it; its reply and its notification are awaited (the
    /// notification may come first: a server may tell before it answers).
    Outstanding { sent: Duration, replied: Option<Duration>, notified: Option<Duration> },
    /// Out of the draw for the rest of the run.
    Retired(Retirement),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Retirement {
    /// Its notification did not come in time (a later one is counted as late).
    Missed,
    /// Its send failed: whether the message exists, and so whether a notification will come,
    /// is unknown.
    SendFailed,
    /// Its stream ended: no notification can come.
    StreamLost,
}

/// The counts of a run's notifications.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// Sends answered with success whose notification came within the deadline.
    pub delivered: u64,
    /// Of those, notifications that came before the send's reply was read (latency 0).
    pub before_reply: u64,
    /// Sends answered with success whose notification did not come within the deadline
    /// after the reply (or whose agent's stream ended first).
    pub missed: u64,
    /// Notifications that came after their message was counted as missed.
    pub late: u64,
    /// Notifications for an agent with no message outstanding (a duplicate, say).
    pub unexpected: u64,
    /// Failed sends: their agent left the draw, their notification was not awaited.
    pub failed_sends: u64,
    /// Streams that ended during the run (their agents left the draw).
    pub streams_lost: u64,
}

/// The awaited notifications of every agent.
#[derive(Debug)]
pub struct Ledger {
    agents: Vec<Agent>,
    /// The agents a send may pick.
    free: Vec<usize>,
    rng: fastrand::Rng,
    deadline: Duration,
    tally: Tally,
    /// From the send's reply to the notification (0 when it came first).
    from_reply: Recorder,
    /// From the send's request being written to the notification.
    from_send: Recorder,
}

impl Ledger {
    /// `agents` agents, none outstanding; a notification is missed `deadline` after its
    /// send's reply; `seed` fixes the draw.
    pub fn new(agents: usize, deadline: Duration, seed: u64) -> Self {
        Self {
            agents: vec![Agent::Free; agents],
            free: (0..agents).collect(),
            rng: fastrand::Rng::with_seed(seed),
            deadline,
            tally: Tally::default(),
            from_reply: Recorder::new(),
            from_send: Recorder::new(),
        }
    }

    /// Picks a random free agent and marks a message to it outstanding, sent at `now`.
    pub fn pick(&mut self, now: Duration) -> Choice {
        if self.free.is_empty() {
            let waiting = self.agents.iter().any(|a| matches!(a, Agent::Outstanding { .. }));
            return if waiting { Choice::Busy } else { Choice::Exhausted };
        }
        let agent = self.free.swap_remove(self.rng.usize(..self.free.len()));
        self.agents[agent] = Agent::Outstanding { sent: now, replied: None, notified: None };
        Choice::Call(agent)
    }

    /// The send to `agent` was answered at `now`: with success (`ok`), or it failed.
    pub fn answered(&mut self, agent: usize, now: Duration, ok: bool) {
        let Some(Agent::Outstanding { sent, notified, .. }) = self.agents.get(agent).copied()
        else {
            return;
        };
        if !ok {
            self.tally.failed_sends += 1;
            self.agents[agent] = Agent::Retired(Retirement::SendFailed);
            return;
        }
        match notified {
            Some(told) => self.deliver(agent, sent, now, told),
            None => {
                self.agents[agent] = Agent::Outstanding { sent, replied: Some(now), notified };
            }
        }
    }

    /// A notification for `agent` came at `now`.
    pub fn notified(&mut self, agent: usize, now: Duration) {
        match self.agents.get(agent).copied() {
            Some(Agent::Outstanding { sent, replied: Some(replied), notified: None }) => {
                self.deliver(agent, sent, replied, now);
            }
            Some(Agent::Outstanding { sent, replied: None, notified: None }) => {
                let notified = Some(now);
                self.agents[agent] = Agent::Outstanding { sent, replied: None, notified };
            }
            Some(Agent::Retired(Retirement::Missed)) => self.tally.late += 1,
            // Free, told twice, or its send failed (then whether a notification was due is
            // unknown, and counting it as unexpected errs on the side of reporting it).
            Some(_) => self.tally.unexpected += 1,
            None => {}
        }
    }

    /// `agent`'s stream ended: an outstanding message's notification is missed.
    pub fn stream_lost(&mut self, agent: usize) {
        let Some(state) = self.agents.get(agent).copied() else { return };
        self.tally.streams_lost += 1;
        match state {
            Agent::Free => self.free.retain(|&a| a != agent),
            Agent::Outstanding { notified: None, .. } => self.tally.missed += 1,
            Agent::Outstanding { .. } | Agent::Retired(_) => {}
        }
        if !matches!(state, Agent::Retired(_)) {
            self.agents[agent] = Agent::Retired(Retirement::StreamLost);
        }
    }

    /// Counts as missed every notification still awaited more than the deadline after its
    /// send's reply, at `now`.
    pub fn sweep(&mut self, now: Duration) {
        for agent in self.agents.iter_mut() {
            if let Agent::Outstanding { replied: Some(replied), notified: None, .. } = *agent
                && now.saturating_sub(replied) > self.deadline
            {
                self.tally.missed += 1;
                *agent = Agent::Retired(Retirement::Missed);
            }
        }
    }

    /// Counts every notification still awaited as missed (the run is over).
    pub fn finish(&mut self) {
        for agent in self.agents.iter_mut() {
            if let Agent::Outstanding { notified: None, .. } = *agent {
                self.tally.missed += 1;
                *agent = Agent::Retired(Retirement::Missed);
            }
        }
    }

    /// Messages whose notification is still awaited.
    pub fn outstanding(&self) -> usize {
        self.agents.iter().filter(|a| matches!(a, Agent::Outstanding { .. })).count()
    }

    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    /// The latencies from each send's reply, and from each send's request, to its
    /// notification (only the latency figures of the summaries mean anything).
    pub fn latencies(&self) -> (Summary, Summary) {
        (self.from_reply.summary(Duration::ZERO), self.from_send.summary(Duration::ZERO))
    }

    fn deliver(&mut self, agent: usize, sent: Duration, replied: Duration, notified: Duration) {
        self.tally.delivered += 1;
        if notified < replied {
            self.tally.before_reply += 1;
        }
        self.from_reply.record_ok(notified.saturating_sub(replied));
        self.from_send.record_ok(notified.saturating_sub(sent));
        self.agents[agent] = Agent::Free;
        self.free.push(agent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(value: u64) -> Duration {
        Duration::from_millis(value)
    }

    fn picked(ledger: &mut Ledger, now: Duration) -> usize {
        match ledger.pick(now) {
            Choice::Call(agent) => agent,
            other => panic!("expected an agent, got {other:?}"),
        }
    }

    #[test]
    fn a_notification_answers_its_agents_one_outstanding_send() {
        let mut ledger = Ledger::new(2, ms(100), 7);
        let first = picked(&mut ledger, ms(0));
        let second = picked(&mut ledger, ms(1));
        assert_ne!(first, second, "an agent with a message outstanding is not picked again");
        assert_eq!(ledger.pick(ms(2)), Choice::Busy);
        ledger.answered(first, ms(4), true);
        ledger.answered(second, ms(5), true);
        ledger.notified(second, ms(8));
        ledger.notified(first, ms(20));
        // The histogram keeps 3 significant digits: whole milliseconds are exact enough.
        let (from_reply, from_send) = ledger.latencies();
        assert_eq!((from_reply.requests, from_reply.max_ms.round()), (2, 16.0));
        assert_eq!(from_send.max_ms.round(), 20.0);
        assert_eq!(ledger.tally(), &Tally { delivered: 2, ..Tally::default() });
        assert_eq!(ledger.outstanding(), 0);
        assert!(matches!(ledger.pick(ms(21)), Choice::Call(_)), "both are free again");
    }

    #[test]
    fn a_notification_before_the_reply_counts_as_zero_and_early() {
        let mut ledger = Ledger::new(1, ms(100), 1);
        let agent = picked(&mut ledger, ms(0));
        ledger.notified(agent, ms(3));
        assert_eq!(ledger.outstanding(), 1, "the reply is still awaited");
        ledger.answered(agent, ms(5), true);
        let (from_reply, from_send) = ledger.latencies();
        assert_eq!((from_reply.requests, from_reply.max_ms), (1, 0.001), "clamped to the floor");
        assert_eq!(from_send.max_ms.round(), 3.0);
        assert_eq!(ledger.tally().before_reply, 1);
    }

    #[test]
    fn a_notification_past_the_deadline_is_missed_then_late_and_the_agent_retired() {
        let mut ledger = Ledger::new(1, ms(100), 3);
        let agent = picked(&mut ledger, ms(0));
        ledger.answered(agent, ms(10), true);
        ledger.sweep(ms(110));
        assert_eq!(ledger.tally().missed, 0, "exactly at the deadline is still in time");
        ledger.sweep(ms(111));
        assert_eq!(ledger.tally().missed, 1);
        assert_eq!(ledger.pick(ms(112)), Choice::Exhausted, "a missed agent leaves the draw");
        ledger.notified(agent, ms(150));
        assert_eq!(ledger.tally(), &Tally { missed: 1, late: 1, ..Tally::default() });
        assert_eq!(ledger.latencies().0.requests, 0, "nothing delivered");
    }

    #[test]
    fn failures_strays_and_lost_streams_are_counted_not_matched() {
        let mut ledger = Ledger::new(3, ms(100), 11);
        // A notification for an agent nobody wrote to.
        ledger.notified(0, ms(1));
        ledger.notified(9, ms(1));
        let failed = picked(&mut ledger, ms(2));
        ledger.answered(failed, ms(3), false);
        ledger.notified(failed, ms(4));
        let lost = picked(&mut ledger, ms(5));
        ledger.answered(lost, ms(6), true);
        ledger.stream_lost(lost);
        let last = picked(&mut ledger, ms(7));
        ledger.answered(last, ms(8), true);
        ledger.finish();
        let tally = ledger.tally();
        assert_eq!(
            (tally.unexpected, tally.failed_sends, tally.streams_lost, tally.missed),
            (2, 1, 1, 2),
            "{tally:?}"
        );
        assert_eq!(tally.delivered, 0);
        assert_eq!(ledger.outstanding(), 0);
        assert_eq!(ledger.pick(ms(9)), Choice::Exhausted);
    }

    #[test]
    fn the_draw_covers_every_agent() {
        let mut ledger = Ledger::new(50, ms(100), 5);
        let mut seen = std::collections::BTreeSet::new();
        for n in 0..2_000 {
            let agent = picked(&mut ledger, ms(n));
            seen.insert(agent);
            ledger.notified(agent, ms(n));
            ledger.answered(agent, ms(n), true);
        }
        assert_eq!(seen.len(), 50);
        assert_eq!(ledger.tally().delivered, 2_000);
    }
}
