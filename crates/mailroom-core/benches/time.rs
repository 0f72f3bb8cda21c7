//! What `model/time.rs`'s hand-written text buys: each `Timestamp` method against the `time`
//! crate doing the same job on the same 1,000 instants (2024–2026, with microseconds, the
//! shape of a `created_ts`). `to_db` and `to_iso` against `format` with the same format
//! description (two for `to_iso`, whose fraction appears only when it is not zero);
//! `parse_db` against `PrimitiveDateTime::parse` with a description of the stored forms (it
//! also takes seven to nine fraction digits, which `parse_db` refuses); `parse_iso` against
//! `OffsetDateTime::parse` with ISO 8601. The outputs are checked equal once; then the two
//! ways alternate round by round, and each figure is the median over 21 rounds of the mean
//! time per call.
//!
//! `cargo bench -p mailroom-core --bench time` (release).

use std::hint::black_box;
use std::time::Instant;

use mailroom_core::model::time::Timestamp;
use time::format_description::BorrowedFormatItem;
use time::format_description::well_known::Iso8601;
use time::macros::format_description;
use time::{OffsetDateTime, PrimitiveDateTime};

const ROUNDS: usize = 21;
const CALLS_PER_ROUND: usize = 200_000;

const DB: &[BorrowedFormatItem<'_>] =
    format_description!("[year]-[month]-[day] [hour]:[minute]:[second].[subsecond digits:6]");
const DB_FORMS: &[BorrowedFormatItem<'_>] = format_description!(
    version = 2,
    "[year]-[month]-[day][first [ ][T]][hour]:[minute]:[second][optional [.[subsecond digits:1+]]]"
);
const ISO_WHOLE: &[BorrowedFormatItem<'_>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]+00:00");
const ISO_FRACTION: &[BorrowedFormatItem<'_>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]+00:00");

fn crate_time(t: Timestamp) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(t.as_micros()) * 1000).expect("in range")
}

fn crate_to_db(t: Timestamp) -> String {
    crate_time(t).format(DB).expect("format")
}

fn crate_to_iso(t: Timestamp) -> String {
    let time = crate_time(t);
    let description = if time.microsecond() == 0 { ISO_WHOLE } else { ISO_FRACTION };
    time.format(description).expect("format")
}

fn micros(nanos: i128) -> Option<Timestamp> {
    i64::try_from(nanos / 1000).ok().map(Timestamp::from_micros)
}

fn crate_parse_db(text: &str) -> Option<Timestamp> {
    micros(PrimitiveDateTime::parse(text, DB_FORMS).ok()?.assume_utc().unix_timestamp_nanos())
}

fn crate_parse_iso(text: &str) -> Option<Timestamp> {
    micros(OffsetDateTime::parse(text, &Iso8601::DEFAULT).ok()?.unix_timestamp_nanos())
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Mean nanoseconds per call over one round, `call` taking the input's index.
fn round<T>(inputs: usize, call: &mut impl FnMut(usize) -> T) -> f64 {
    let started = Instant::now();
    for i in 0..CALLS_PER_ROUND {
        black_box(call(black_box(i % inputs)));
    }
    started.elapsed().as_secs_f64() * 1e9 / CALLS_PER_ROUND as f64
}

fn compare<A, B>(
    name: &str,
    inputs: usize,
    mut ours: impl FnMut(usize) -> A,
    mut theirs: impl FnMut(usize) -> B,
) {
    let (mut hand, mut crate_way) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        hand.push(round(inputs, &mut ours));
        crate_way.push(round(inputs, &mut theirs));
    }
    let (hand, crate_way) = (median(hand), median(crate_way));
    println!(
        "{name:<10} Timestamp {hand:6.1} ns, time crate {crate_way:6.1} ns ({:.2}×)",
        crate_way / hand
    );
}

fn main() {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let start = Timestamp::parse_iso("2024-01-01").expect("start");
    let span = 3 * 365 * 86_400 * 1_000_000;
    let stamps: Vec<Timestamp> = (0..1000)
        .map(|_| Timestamp::from_micros(start.as_micros() + (next() % span) as i64))
        .collect();
    let db: Vec<String> = stamps.iter().map(|t| t.to_db()).collect();
    let iso: Vec<String> = stamps.iter().map(|t| t.to_iso()).collect();
    for (i, &t) in stamps.iter().enumerate() {
        assert_eq!(crate_to_db(t), db[i], "the same text");
        assert_eq!(crate_to_iso(t), iso[i], "the same text");
        assert_eq!(crate_parse_db(&db[i]), Some(t), "the same instant");
        assert_eq!(crate_parse_iso(&iso[i]), Some(t), "the same instant");
    }
    let n = stamps.len();
    compare("to_iso", n, |i| stamps[i].to_iso(), |i| crate_to_iso(stamps[i]));
    compare("to_db", n, |i| stamps[i].to_db(), |i| crate_to_db(stamps[i]));
    compare("parse_db", n, |i| Timestamp::parse_db(&db[i]), |i| crate_parse_db(&db[i]));
    compare("parse_iso", n, |i| Timestamp::parse_iso(&iso[i]), |i| crate_parse_iso(&iso[i]));
}
