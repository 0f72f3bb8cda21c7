//! UTC timestamps with microsecond precision, formatted and parsed the way the reference does.
//!
//! The reference stores naive UTC datetimes (`YYYY-MM-DD HH:MM:SS.ffffff` in SQLite) and emits
//! Python `isoformat()` strings with an explicit `+00:00`. A single integer of microseconds
//! since the Unix epoch is enough to reproduce both. The calendar (which dates exist, a date to
//! and from its day number) is the `time` crate's. The text is written and read here by hand:
//! its forms are the reference's and the contract's (`docs/compat/tools.md` §1.4), which
//! `time`'s parsers do not take exactly, and `time`'s formatting and parsing took 3.5 to 5.8
//! times as long on paths every listed message and every stored timestamp read go through
//! (`benches/time.rs`; `BENCHMARKS.md`).

use std::time::{SystemTime, UNIX_EPOCH};

use ::time::{Date, Month, UtcDateTime};

const MICROS_PER_SECOND: i64 = 1_000_000;
const SECONDS_PER_DAY: i64 = 86_400;
const MICROS_PER_DAY: i64 = SECONDS_PER_DAY * MICROS_PER_SECOND;
/// The Gregorian calendar repeats every 400 years, which are 146,097 days.
const DAYS_PER_400_YEARS: i64 = 146_097;
/// 1970-01-01's Julian day number, the day count `time::Date` converts to and from.
const UNIX_EPOCH_JULIAN_DAY: i32 = UtcDateTime::UNIX_EPOCH.to_julian_day();

/// A point in time: microseconds since 1970-01-01T00:00:00 UTC.
///
/// Ordering and equality are those of the instant, which is what every `created_ts` comparison
/// and `since_ts` filter needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

/// A timestamp split into calendar fields, all in UTC.
struct Civil {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    micros: u32,
}

impl Civil {
    /// Appends `YYYY-MM-DD<separator>HH:MM:SS`. Digits are written by hand: every listed
    /// message formats its timestamps, and `format!` was 4 % of the server's time under an
    /// inbox load.
    fn push_date_time(&self, text: &mut String, separator: char) {
        match u32::try_from(self.year) {
            Ok(year) if year <= 9999 => push_padded(text, year, 4),
            // Outside four digits, as Python's and `format!`'s padding print it.
            _ => {
                use std::fmt::Write as _;
                let _ = write!(text, "{:04}", self.year);
            }
        }
        text.push('-');
        push_padded(text, self.month, 2);
        text.push('-');
        push_padded(text, self.day, 2);
        text.push(separator);
        push_padded(text, self.hour, 2);
        text.push(':');
        push_padded(text, self.minute, 2);
        text.push(':');
        push_padded(text, self.second, 2);
    }
}

/// Appends the last `width` decimal digits of `value`, zero-padded.
fn push_padded(text: &mut String, value: u32, width: u32) {
    for place in (0..width).rev() {
        let digit = value / 10u32.pow(place) % 10;
        text.push(char::from(b'0' + digit as u8));
    }
}

impl Timestamp {
    /// The current time from the system clock.
    ///
    /// Use cases take the clock as a parameter so tests stay deterministic; only the clock
    /// implementation should call this.
    pub fn now() -> Self {
        let micros = match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(after) => i64::try_from(after.as_micros()).unwrap_or(i64::MAX),
            Err(before) => i64::try_from(before.duration().as_micros()).map_or(i64::MIN, |m| -m),
        };
        Timestamp(micros)
    }

    /// The earliest instant the database and the archive hold: 0001-01-01T00:00:00 UTC, the
    /// first day of Python's `datetime` (the reference's, and the archive's readers').
    pub const FIRST: Timestamp = Timestamp(-62_135_596_800 * MICROS_PER_SECOND);
    /// The latest instant the database and the archive hold: 9999-12-31T23:59:59.999999 UTC,
    /// the last of Python's `datetime` and of the four-digit years the stored text keeps.
    pub const LAST: Timestamp = Timestamp(253_402_300_800 * MICROS_PER_SECOND - 1);

    /// Whether this instant lies within [`Self::FIRST`]..=[`Self::LAST`], so that it can be
    /// stored, archived and read back.
    pub fn is_storable(self) -> bool {
        (Self::FIRST..=Self::LAST).contains(&self)
    }

    /// This instant moved by `secs` seconds, or `None` when the result would fall outside what
    /// the database and the archive hold ([`Self::is_storable`]).
    pub fn checked_plus_seconds(self, secs: i64) -> Option<Self> {
        let micros = secs.checked_mul(MICROS_PER_SECOND)?;
        Some(Timestamp(self.0.checked_add(micros)?)).filter(|t| t.is_storable())
    }

    /// Wraps a count of microseconds since the Unix epoch.
    pub fn from_micros(micros: i64) -> Self {
        Timestamp(micros)
    }

    /// Microseconds since the Unix epoch.
    pub fn as_micros(self) -> i64 {
        self.0
    }

    /// This instant moved by `secs` seconds (negative moves back), saturating at the extremes
    /// so that a huge TTL cannot wrap around into the past.
    pub fn plus_seconds(self, secs: i64) -> Self {
        Timestamp(self.0.saturating_add(secs.saturating_mul(MICROS_PER_SECOND)))
    }

    /// Python `isoformat()` of the aware UTC datetime: `YYYY-MM-DDTHH:MM:SS[.ffffff]+00:00`,
    /// with the six-digit fraction only when it is not zero. This is the wire format of every
    /// timestamp in tool and REST outputs.
    pub fn to_iso(self) -> String {
        let c = self.civil();
        let mut text = String::with_capacity(32);
        c.push_date_time(&mut text, 'T');
        if c.micros != 0 {
            text.push('.');
            push_padded(&mut text, c.micros, 6);
        }
        text.push_str("+00:00");
        text
    }

    /// The database format `YYYY-MM-DD HH:MM:SS.ffffff`, always with six fraction digits so that
    /// text comparison in SQL orders like time.
    pub fn to_db(self) -> String {
        let c = self.civil();
        let mut text = String::with_capacity(26);
        c.push_date_time(&mut text, ' ');
        text.push('.');
        push_padded(&mut text, c.micros, 6);
        text
    }

    /// Parses a stored naive UTC value: `YYYY-MM-DD HH:MM:SS[.f{1,6}]`, also with a `T` between
    /// date and time, since rows written by other tools use either.
    pub fn parse_db(s: &str) -> Option<Self> {
        let mut cursor = Cursor::new(s);
        let (year, month, day) = cursor.date()?;
        if !(cursor.eat(b' ') || cursor.eat(b'T')) {
            return None;
        }
        let (hour, minute) = (cursor.number(2)?, cursor.colon_number()?);
        let second = cursor.colon_number()?;
        let micros = if cursor.eat(b'.') { cursor.fraction(6)? } else { 0 };
        cursor.finished()?;
        Self::from_civil(year, month, day, (hour, minute, second), micros)
    }

    /// Parses a stored value as [`Self::parse_db`] does, reading a year outside four digits,
    /// which earlier versions could store (`33715-…`, `-001-…`), as [`Self::LAST`] or
    /// [`Self::FIRST`]: such a row stays readable (and releasable) instead of failing every
    /// read that meets it.
    pub fn parse_db_clamped(s: &str) -> Option<Self> {
        if let Some(parsed) = Self::parse_db(s) {
            return Some(parsed);
        }
        let digits = s.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 4 && s.as_bytes().get(digits) == Some(&b'-') {
            return Some(Self::LAST);
        }
        if s.starts_with("0000-") {
            return Some(Self::FIRST);
        }
        let negative_year =
            s.strip_prefix('-').is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()));
        negative_year.then_some(Self::FIRST)
    }

    /// Parses caller-supplied ISO-8601 such as `since_ts`, normalising to UTC.
    ///
    /// Accepts a bare date `YYYY-MM-DD` (midnight), or a date, `T`/`t`/space, and
    /// `HH[:MM[:SS[.fraction]]]` (`.` or `,`; digits beyond six are truncated like Python),
    /// followed by `Z`, `±HH[:MM[:SS]]`, `±HHMM`, or nothing (naive input counts as UTC, as in
    /// the reference). This is the subset of Python's `fromisoformat` that clients send; the
    /// compact `20240101T1030` forms are not accepted.
    pub fn parse_iso(s: &str) -> Option<Self> {
        let mut cursor = Cursor::new(s);
        let (year, month, day) = cursor.date()?;
        if cursor.is_at_end() {
            return Self::from_civil(year, month, day, (0, 0, 0), 0);
        }
        if !(cursor.eat(b'T') || cursor.eat(b't') || cursor.eat(b' ')) {
            return None;
        }
        let (time, micros) = cursor.iso_time()?;
        let offset_seconds = cursor.iso_offset()?;
        cursor.finished()?;
        let local = Self::from_civil(year, month, day, time, micros)?;
        // An offset can carry a time past the last one stored (or before the first), which
        // then compares wrongly with stored text: refused like any other bad timestamp.
        Some(local.plus_seconds(-offset_seconds)).filter(|t| t.is_storable())
    }

    /// The timestamp used in archive file names, `YYYY-MM-DDTHH-MM-SSZ`: no colons, so it is
    /// valid on every filesystem, and it still sorts chronologically.
    pub fn archive_stamp(self) -> String {
        let c = self.civil();
        format!(
            "{:04}-{:02}-{:02}T{:02}-{:02}-{:02}Z",
            c.year, c.month, c.day, c.hour, c.minute, c.second
        )
    }

    /// The UTC year and month, which name the archive's `YYYY/MM` message directories.
    pub fn year_month(self) -> (i32, u32) {
        let c = self.civil();
        (i32::try_from(c.year).unwrap_or(i32::MAX), c.month)
    }

    /// Splits the instant into UTC calendar fields.
    fn civil(self) -> Civil {
        let (year, month, day) = date_of_day(self.0.div_euclid(MICROS_PER_DAY));
        let micros_of_day = self.0.rem_euclid(MICROS_PER_DAY);
        let second_of_day = micros_of_day / MICROS_PER_SECOND;
        // Every value below is bounded by the day length, so the narrowing cannot fail.
        let field = |value: i64| u32::try_from(value).unwrap_or(0);
        Civil {
            year,
            month,
            day,
            hour: field(second_of_day / 3600),
            minute: field(second_of_day / 60 % 60),
            second: field(second_of_day % 60),
            micros: field(micros_of_day % MICROS_PER_SECOND),
        }
    }

    /// Builds a timestamp from validated UTC calendar fields; `None` if any field is out of range.
    fn from_civil(
        year: i64,
        month: u32,
        day: u32,
        (hour, minute, second): (u32, u32, u32),
        micros: u32,
    ) -> Option<Self> {
        let days = day_of_date(year, month, day)?;
        if hour > 23 || minute > 59 || second > 59 {
            return None;
        }
        let seconds = days * SECONDS_PER_DAY + i64::from(hour * 3600 + minute * 60 + second);
        Some(Timestamp(seconds * MICROS_PER_SECOND + i64::from(micros)))
    }
}

impl serde::Serialize for Timestamp {
    /// Serialises as [`Timestamp::to_iso`], the format every client of the reference expects.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_iso())
    }
}

/// The proleptic Gregorian date (year, month, day) `days` after 1970-01-01, for any count.
///
/// `time`'s dates end at ±9999 years, so the day is placed within the 400 years from 1970,
/// which the calendar repeats, and the whole cycles' years are added back: an instant past
/// the storable range (in an error message, a Git commit's date) still prints as a date.
fn date_of_day(days: i64) -> (i64, u32, u32) {
    let cycles = days.div_euclid(DAYS_PER_400_YEARS);
    let day_in_cycle = i32::try_from(days.rem_euclid(DAYS_PER_400_YEARS)).unwrap_or(0);
    // 1970-01-01 to 2369-12-31, within `time`'s range: the fallback is never taken.
    let date = Date::from_julian_day(UNIX_EPOCH_JULIAN_DAY + day_in_cycle).unwrap_or(Date::MIN);
    let (year, month, day) = date.to_calendar_date();
    (i64::from(year) + 400 * cycles, u32::from(u8::from(month)), u32::from(day))
}

/// Days from 1970-01-01 to the date `year-month-day`, or `None` when there is no such date.
fn day_of_date(year: i64, month: u32, day: u32) -> Option<i64> {
    let month = Month::try_from(u8::try_from(month).ok()?).ok()?;
    let year = i32::try_from(year).ok()?;
    let date = Date::from_calendar_date(year, month, u8::try_from(day).ok()?).ok()?;
    Some(i64::from(date.to_julian_day() - UNIX_EPOCH_JULIAN_DAY))
}

/// A left-to-right reader over the ASCII bytes of a timestamp string.
struct Cursor<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Self {
        Cursor { bytes: text.as_bytes(), position: 0 }
    }

    fn is_at_end(&self) -> bool {
        self.position == self.bytes.len()
    }

    fn finished(&self) -> Option<()> {
        self.is_at_end().then_some(())
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.position).copied()
    }

    /// Consumes `byte` if it comes next.
    fn eat(&mut self, byte: u8) -> bool {
        let matched = self.peek() == Some(byte);
        if matched {
            self.position += 1;
        }
        matched
    }

    /// Reads exactly `width` decimal digits.
    fn number(&mut self, width: usize) -> Option<u32> {
        let digits = self.bytes.get(self.position..self.position + width)?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        self.position += width;
        Some(digits.iter().fold(0, |value, digit| value * 10 + u32::from(digit - b'0')))
    }

    /// Reads `:` followed by two digits.
    fn colon_number(&mut self) -> Option<u32> {
        if self.eat(b':') { self.number(2) } else { None }
    }

    /// Reads `YYYY-MM-DD` (ranges are checked later, together with the time).
    fn date(&mut self) -> Option<(i64, u32, u32)> {
        let year = self.number(4)?;
        if year == 0 || !self.eat(b'-') {
            return None;
        }
        let month = self.number(2)?;
        if !self.eat(b'-') {
            return None;
        }
        Some((i64::from(year), month, self.number(2)?))
    }

    /// Reads fraction digits as microseconds: at least one, at most `max_digits`, and any
    /// digits beyond the sixth are dropped (Python truncates rather than rounds).
    fn fraction(&mut self, max_digits: usize) -> Option<u32> {
        let start = self.position;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.position += 1;
        }
        let digits = &self.bytes[start..self.position];
        if digits.is_empty() || digits.len() > max_digits {
            return None;
        }
        let micros = (0..6).fold(0, |value, index| {
            value * 10 + digits.get(index).map_or(0, |digit| u32::from(digit - b'0'))
        });
        Some(micros)
    }

    /// Reads `HH[:MM[:SS[.fraction]]]`.
    fn iso_time(&mut self) -> Option<((u32, u32, u32), u32)> {
        let hour = self.number(2)?;
        if self.peek() != Some(b':') {
            return Some(((hour, 0, 0), 0));
        }
        let minute = self.colon_number()?;
        if self.peek() != Some(b':') {
            return Some(((hour, minute, 0), 0));
        }
        let second = self.colon_number()?;
        let micros = if self.eat(b'.') || self.eat(b',') { self.fraction(usize::MAX)? } else { 0 };
        Some(((hour, minute, second), micros))
    }

    /// Reads an optional UTC offset and returns it in seconds east of UTC.
    fn iso_offset(&mut self) -> Option<i64> {
        if self.eat(b'Z') {
            return Some(0);
        }
        let sign = match self.peek() {
            None => return Some(0),
            Some(b'+') => 1,
            Some(b'-') => -1,
            Some(_) => return None,
        };
        self.position += 1;
        let hours = self.number(2)?;
        let (minutes, seconds) = match self.peek() {
            Some(b':') => {
                let minutes = self.colon_number()?;
                (minutes, if self.peek() == Some(b':') { self.colon_number()? } else { 0 })
            }
            // `±HHMM` has no seconds (`±HHMM:SS` is neither the contract's nor Python's).
            Some(_) => (self.number(2)?, 0),
            None => (0, 0),
        };
        if hours > 23 || minutes > 59 || seconds > 59 {
            return None;
        }
        Some(sign * i64::from(hours * 3600 + minutes * 60 + seconds))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compares what a rule returned for `input` with what we expected, naming the input.
    fn check<T: PartialEq + std::fmt::Debug>(input: &str, actual: T, expected: T) {
        assert_eq!(actual, expected, "input: {input:?}");
    }

    /// Checks `to_iso`, `to_db` and `archive_stamp` of the instant `micros`, and returns it.
    fn check_texts(micros: i64, iso: &str, db: &str, stamp: &str) -> Timestamp {
        let timestamp = Timestamp::from_micros(micros);
        check(iso, timestamp.to_iso().as_str(), iso);
        check(db, timestamp.to_db().as_str(), db);
        check(stamp, timestamp.archive_stamp().as_str(), stamp);
        timestamp
    }

    /// Microseconds of a UTC civil time, computed independently of the code under test from a
    /// count of days given by hand.
    fn micros(days: i64, hour: i64, minute: i64, second: i64, fraction: i64) -> i64 {
        ((days * 24 + hour) * 60 + minute) * 60 * 1_000_000 + second * 1_000_000 + fraction
    }

    #[test]
    fn formatting_past_what_python_holds() {
        // (micros, to_iso, to_db, archive_stamp): years the reference's `datetime` cannot
        // hold (`matches_the_reference_outputs` has the others), printed all the same.
        let cases = [
            (
                micros(2_932_897, 0, 0, 0, 5),
                "10000-01-01T00:00:00.000005+00:00",
                "10000-01-01 00:00:00.000005",
                "10000-01-01T00-00-00Z",
            ),
            (
                -62_135_596_800_000_001,
                "0000-12-31T23:59:59.999999+00:00",
                "0000-12-31 23:59:59.999999",
                "0000-12-31T23-59-59Z",
            ),
            (
                i64::MAX,
                "294247-01-10T04:00:54.775807+00:00",
                "294247-01-10 04:00:54.775807",
                "294247-01-10T04-00-54Z",
            ),
            (
                i64::MIN,
                "-290308-12-21T19:59:05.224192+00:00",
                "-290308-12-21 19:59:05.224192",
                "-290308-12-21T19-59-05Z",
            ),
        ];
        for (value, iso, db, stamp) in cases {
            check_texts(value, iso, db, stamp);
        }
    }

    #[test]
    fn year_and_month() {
        let cases = [
            ("1970-01-01 00:00:00", (1970, 1)),
            ("2000-02-29 23:59:59", (2000, 2)),
            ("2024-12-31 23:59:59.999999", (2024, 12)),
            ("2025-03-01 00:00:00", (2025, 3)),
        ];
        for (input, expected) in cases {
            check(input, Timestamp::parse_db(input).map(Timestamp::year_month), Some(expected));
        }
    }

    #[test]
    fn calendar_round_trips_every_day_from_0001_to_9999() {
        let (first, last) = (day_of_date(1, 1, 1), day_of_date(9999, 12, 31));
        check("0001-01-01", first, Some(-719_162));
        check("9999-12-31", last, Some(2_932_896));
        for days in first.unwrap_or(0)..=last.unwrap_or(0) {
            let (year, month, day) = date_of_day(days);
            assert_eq!(day_of_date(year, month, day), Some(days), "{year}-{month}-{day}");
        }
    }

    #[test]
    fn database_parsing() {
        let cases = [
            ("2024-12-31 23:59:59.999999", Some(micros(20_088, 23, 59, 59, 999_999))),
            ("2024-12-31T23:59:59.999999", Some(micros(20_088, 23, 59, 59, 999_999))),
            ("2024-01-01 09:05:07.12", Some(micros(19_723, 9, 5, 7, 120_000))),
            ("2024-01-01 09:05:07", Some(micros(19_723, 9, 5, 7, 0))),
            ("2000-02-29 00:00:00", Some(micros(11_016, 0, 0, 0, 0))),
            ("2001-02-29 00:00:00", None),
            ("2024-01-01 09:05:07.1234567", None),
            ("2024-01-01 09:05:07.", None),
            ("2024-01-01 09:05", None),
            ("2024-01-01 24:00:00", None),
            ("2024-01-01 09:05:07+00:00", None),
            ("2024-13-01 00:00:00", None),
            ("0000-01-01 00:00:00", None),
            ("", None),
        ];
        for (input, expected) in cases {
            check(input, Timestamp::parse_db(input).map(Timestamp::as_micros), expected);
        }
    }

    proptest::proptest! {
        /// Every instant formats, and both texts read back exactly the storable ones (a year
        /// outside 0001-9999 is refused).
        #[test]
        fn any_instant_round_trips_through_text(
            micros in proptest::prop_oneof![
                proptest::prelude::any::<i64>(),
                Timestamp::FIRST.as_micros()..=Timestamp::LAST.as_micros(),
            ]
        ) {
            let timestamp = Timestamp::from_micros(micros);
            let expected = timestamp.is_storable().then_some(timestamp);
            proptest::prop_assert_eq!(Timestamp::parse_iso(&timestamp.to_iso()), expected);
            proptest::prop_assert_eq!(Timestamp::parse_db(&timestamp.to_db()), expected);
        }
    }

    #[test]
    fn arithmetic_and_serialisation() {
        let start = Timestamp::from_micros(1_500_000);
        let cases = [
            ("plus 60", start.plus_seconds(60).as_micros(), 61_500_000),
            ("minus 2", start.plus_seconds(-2).as_micros(), -500_000),
            ("saturates", start.plus_seconds(i64::MAX).as_micros(), i64::MAX),
        ];
        for (label, actual, expected) in cases {
            check(label, actual, expected);
        }
        let json = serde_json::to_string(&start).unwrap_or_default();
        check("serde", json.as_str(), "\"1970-01-01T00:00:01.500000+00:00\"");
        check("now", Timestamp::now() > Timestamp::parse_iso("2025-01-01").unwrap_or(start), true);
    }

    /// What the reference prints for these instants, from Python 3.13 (the version it runs
    /// on), `t = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=m)`:
    /// `t.isoformat()` (the wire), SQLAlchemy's SQLite text
    /// `"%04d-%02d-%02d %02d:%02d:%02d.%06d"` (the database), and the archive file name's
    /// `t.strftime("%Y-%m-%dT%H-%M-%SZ")` with its `%Y` and `%m` directories. Below year 1000,
    /// glibc's `%Y` is not padded (`1-01-01T00-00-00Z`); ours is, to four digits, and no
    /// message can carry such a date (`created_ts` is the server's clock).
    #[test]
    fn matches_the_reference_outputs() {
        let cases = [
            (0, "1970-01-01T00:00:00+00:00", "1970-01-01 00:00:00.000000", "1970-01-01T00-00-00Z"),
            (
                -1,
                "1969-12-31T23:59:59.999999+00:00",
                "1969-12-31 23:59:59.999999",
                "1969-12-31T23-59-59Z",
            ),
            (
                1_500_000,
                "1970-01-01T00:00:01.500000+00:00",
                "1970-01-01 00:00:01.500000",
                "1970-01-01T00-00-01Z",
            ),
            (
                1_700_000_000_123_456,
                "2023-11-14T22:13:20.123456+00:00",
                "2023-11-14 22:13:20.123456",
                "2023-11-14T22-13-20Z",
            ),
            (
                -62_135_596_800_000_000,
                "0001-01-01T00:00:00+00:00",
                "0001-01-01 00:00:00.000000",
                "0001-01-01T00-00-00Z", // the reference: 1-01-01T00-00-00Z
            ),
            (
                253_402_300_799_999_999,
                "9999-12-31T23:59:59.999999+00:00",
                "9999-12-31 23:59:59.999999",
                "9999-12-31T23-59-59Z",
            ),
            (
                253_402_300_799_000_000,
                "9999-12-31T23:59:59+00:00",
                "9999-12-31 23:59:59.000000",
                "9999-12-31T23-59-59Z",
            ),
            (
                951_825_600_000_000,
                "2000-02-29T12:00:00+00:00",
                "2000-02-29 12:00:00.000000",
                "2000-02-29T12-00-00Z",
            ),
            (
                1_704_099_907_120_000,
                "2024-01-01T09:05:07.120000+00:00",
                "2024-01-01 09:05:07.120000",
                "2024-01-01T09-05-07Z",
            ),
            (
                -2_203_891_200_000_001,
                "1900-02-28T23:59:59.999999+00:00",
                "1900-02-28 23:59:59.999999",
                "1900-02-28T23-59-59Z",
            ),
            (
                -11_670_915_599_999_995,
                "1600-02-29T23:00:00.000005+00:00",
                "1600-02-29 23:00:00.000005",
                "1600-02-29T23-00-00Z",
            ),
            (
                -62_035_891_200_000_000,
                "0004-02-29T00:00:00+00:00",
                "0004-02-29 00:00:00.000000",
                "0004-02-29T00-00-00Z", // the reference: 4-02-29T00-00-00Z
            ),
            (
                4_107_542_400_000_000,
                "2100-03-01T00:00:00+00:00",
                "2100-03-01 00:00:00.000000",
                "2100-03-01T00-00-00Z",
            ),
            (
                -14_182_940_000_000,
                "1969-07-20T20:17:40+00:00",
                "1969-07-20 20:17:40.000000",
                "1969-07-20T20-17-40Z",
            ),
        ];
        for (value, iso, db, stamp) in cases {
            let timestamp = check_texts(value, iso, db, stamp);
            let (year, month) = (stamp[..4].parse().ok(), stamp[5..7].parse().ok());
            check(stamp, Some(timestamp.year_month()), year.zip(month));
        }
    }

    /// `since_ts` as the reference reads it (strip, a trailing `Z` as `+00:00`, then Python
    /// 3.13's `datetime.fromisoformat`, naive meaning UTC), with the instant it reads or
    /// `None` where it refuses: ours agrees on every input here. Our callers strip too.
    #[test]
    fn iso_parsing_agrees_with_the_reference() {
        let cases = [
            ("2024-01-01T10:30:00+00:00", Some(1_704_105_000_000_000)),
            ("2024-01-01T10:30:00Z", Some(1_704_105_000_000_000)),
            ("2024-01-01T10:30:00", Some(1_704_105_000_000_000)),
            ("2024-01-01T15:30:00+05:00", Some(1_704_105_000_000_000)),
            ("2023-12-31T22:30:00-12:00", Some(1_704_105_000_000_000)),
            ("2023-12-31T23:30:00-01:00", Some(1_704_069_000_000_000)),
            ("2024-01-01T00:30:00+01:00", Some(1_704_065_400_000_000)),
            ("9999-12-31T23:59:59+00:00", Some(253_402_300_799_000_000)),
            ("2024-01-01T10", Some(1_704_103_200_000_000)),
            ("2024-01-01t10:30", Some(1_704_105_000_000_000)),
            ("2024-01-01 10:30:00", Some(1_704_105_000_000_000)),
            ("2024-01-01T10:30Z", Some(1_704_105_000_000_000)),
            ("2024-01-01T10Z", Some(1_704_103_200_000_000)),
            ("2024-01-01", Some(1_704_067_200_000_000)),
            ("2000-02-29", Some(951_782_400_000_000)),
            ("2024-01-01T10:30:00.5Z", Some(1_704_105_000_500_000)),
            ("2024-01-01T10:30:00,5", Some(1_704_105_000_500_000)),
            ("2024-01-01T10:30:00.1234567890123", Some(1_704_105_000_123_456)),
            ("2024-01-01T10:30:00.123456789Z", Some(1_704_105_000_123_456)),
            ("2024-01-01T10:30:00.123-05:00", Some(1_704_123_000_123_000)),
            ("2024-01-01T10:30:00.123456+0530", Some(1_704_085_200_123_456)),
            ("2024-01-01T15:30:00+05", Some(1_704_105_000_000_000)),
            ("2024-01-01T10:30:00+00:00:30", Some(1_704_104_970_000_000)),
            ("2024-02-29T00:00:00-00:30", Some(1_709_166_600_000_000)),
            ("2024-01-01T10:30:00z", None),
            ("2024-01-01T10:30:00ZZ", None),
            ("2024-01-01T10:30:00+05:00Z", None),
            ("2024-01-01T10:30:00UTC", None),
            ("2024-01-01T10:30:00+24:00", None),
            ("2024-01-01T10:30:00+5", None),
            ("2024-01-01T10:30:00+05:3", None),
            ("2024-01-01T10:30:00-", None),
            ("2024-01-01T10:30:00+00:0030", None),
            ("2024-01-01T10:30:00+0000:30", None),
            ("2024-01-01T10:30:00.", None),
            ("2024-01-01T10:30:00,", None),
            ("2024-01-01T10:3", None),
            ("2024-01-01T10:30:0", None),
            ("2024-01-01T24:00:00", None),
            ("2024-01-01T10:30:60", None),
            ("2024-01-01T25:00", None),
            ("2024-01-01T", None),
            ("1900-02-29", None),
            ("0000-01-01", None),
            ("2024-1-01", None),
            ("2024/01/01", None),
            ("2024-001", None),
            ("2024-01", None),
            ("2024", None),
            ("yesterday", None),
            ("", None),
        ];
        for (input, expected) in cases {
            check(input, Timestamp::parse_iso(input).map(Timestamp::as_micros), expected);
        }
    }

    /// Forms the reference reads that the contract leaves out (`docs/compat/tools.md` §1.4:
    /// the basic and week-date forms, any separator, a space before the offset, fractional
    /// offsets, a fraction after the hour or minute), and instants past the storable range
    /// once their offset is applied (§1.9). Refused: `INVALID_TIMESTAMP`.
    #[test]
    fn refused_though_the_reference_reads_them() {
        let inputs = [
            "20240101T103000",
            "20240101",
            "2024-01-01T1030",
            "2024-01-01T103000",
            "2024-W01-1",
            "2024W011",
            "2024-01-01X10:30",
            "2024-01-01T10:30:00 +05:00",
            "2024-01-01T10:30:00+000030",
            "2024-01-01T10:30:00+00:00:30.5",
            "2024-01-01T10:30:00+00:00:30,5",
            "2024-01-01T10.5",
            "2024-01-01T10:30.5",
            "9999-12-31T23:59:59-05:00",
            "0001-01-01T00:30:00+01:00",
        ];
        for input in inputs {
            check(input, Timestamp::parse_iso(input), None);
        }
    }

    #[test]
    fn storable_range() {
        check("first", Timestamp::FIRST.to_db(), "0001-01-01 00:00:00.000000".to_string());
        check("last", Timestamp::LAST.to_db(), "9999-12-31 23:59:59.999999".to_string());
        let now = Timestamp::from_micros(1_700_000_000_000_000);
        let cases = [
            ("an hour", now.checked_plus_seconds(3600), Some(now.plus_seconds(3600))),
            ("to the last", Timestamp::LAST.checked_plus_seconds(0), Some(Timestamp::LAST)),
            ("past the last", Timestamp::LAST.checked_plus_seconds(1), None),
            ("1e12 seconds", now.checked_plus_seconds(1_000_000_000_000), None),
            ("before the first", Timestamp::FIRST.checked_plus_seconds(-1), None),
            ("overflow", now.checked_plus_seconds(i64::MAX), None),
        ];
        for (label, actual, expected) in cases {
            check(label, actual, expected);
        }
        let stored = [
            ("33715-03-01 10:00:00.000000", Some(Timestamp::LAST)),
            ("-001-01-01 00:00:00.000000", Some(Timestamp::FIRST)),
            ("0000-12-31 23:00:00.000000", Some(Timestamp::FIRST)),
            ("2024-01-01 10:30:00.000000", Timestamp::parse_db("2024-01-01 10:30:00")),
            ("12345", None),
            ("garbage", None),
        ];
        for (input, expected) in stored {
            check(input, Timestamp::parse_db_clamped(input), expected);
        }
    }
}
