//! Go `time.ParseDuration` syntax, used by `CatalogSource.spec.updateStrategy.registryPoll.interval`
//! (olm-api.md §1.3): a sequence of decimal numbers with optional fraction and a unit suffix, such
//! as `45s`, `1.5h` or `1h30m`. Units: `ns`, `us` (`µs`, `μs`), `ms`, `s`, `m`, `h`. A lone `0` is
//! valid. Go also accepts a sign; a poll interval must be positive, so negative values are refused
//! here with their own error.

use std::time::Duration;

/// Why a duration string was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("invalid duration {0:?}: expected numbers with units such as 30m, 1h30m or 45s")]
    Invalid(String),
    #[error("invalid duration {text:?}: unknown unit {unit:?} (use ns, us, ms, s, m or h)")]
    UnknownUnit { text: String, unit: String },
    #[error("invalid duration {text:?}: missing unit after {number:?}")]
    MissingUnit { text: String, number: String },
    #[error("invalid duration {0:?}: out of range")]
    Overflow(String),
    #[error("invalid duration {0:?}: must not be negative")]
    Negative(String),
}

const NANOS_PER_UNIT: [(&str, u128); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60 * 1_000_000_000),
    ("h", 60 * 60 * 1_000_000_000),
];

/// Parses a Go duration string.
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let invalid = || DurationError::Invalid(text.to_owned());
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    // Go caps durations at i64 nanoseconds (~292 years).
    let max = u128::from(i64::MAX.unsigned_abs());
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..number_len];
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
            return Err(invalid());
        }
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        if unit.is_empty() {
            return Err(DurationError::MissingUnit {
                text: text.to_owned(),
                number: number.to_owned(),
            });
        }
        let scale = NANOS_PER_UNIT
            .iter()
            .find(|(name, _)| *name == unit)
            .map(|(_, nanos)| *nanos)
            .ok_or_else(|| DurationError::UnknownUnit {
                text: text.to_owned(),
                unit: unit.to_owned(),
            })?;
        let overflow = || DurationError::Overflow(text.to_owned());
        let whole_value: u128 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| overflow())?
        };
        let mut nanos = whole_value.checked_mul(scale).ok_or_else(overflow)?;
        // Fractional part, truncated to nanoseconds as Go does.
        let mut fraction_scale = scale;
        for digit in fraction.bytes() {
            fraction_scale /= 10;
            if fraction_scale == 0 {
                break;
            }
            nanos += u128::from(digit - b'0') * fraction_scale;
        }
        total = total
            .checked_add(nanos)
            .filter(|t| *t <= max)
            .ok_or_else(overflow)?;
    }
    if negative && total > 0 {
        return Err(DurationError::Negative(text.to_owned()));
    }
    let secs = u64::try_from(total / 1_000_000_000)
        .map_err(|_| DurationError::Overflow(text.to_owned()))?;
    // The remainder of a division by 10^9 always fits in u32.
    let subsec = u32::try_from(total % 1_000_000_000).unwrap_or(0);
    Ok(Duration::new(secs, subsec))
}

/// Formats a duration the way Go's `Duration.String` does for whole seconds and above
/// (`1h30m0s`, `15m0s`, `45s`), for status messages that echo the interval in use.
pub fn format(duration: Duration) -> String {
    let total = duration.as_secs();
    let (hours, minutes, seconds) = (total / 3600, (total % 3600) / 60, total % 60);
    let millis = duration.subsec_millis();
    let seconds_text = if millis > 0 {
        format!("{seconds}.{millis:03}")
            .trim_end_matches('0')
            .to_owned()
    } else {
        seconds.to_string()
    };
    match (hours, minutes) {
        (0, 0) => format!("{seconds_text}s"),
        (0, _) => format!("{minutes}m{seconds_text}s"),
        _ => format!("{hours}h{minutes}m{seconds_text}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_durations() {
        let cases = [
            ("0", Duration::ZERO),
            ("45s", Duration::from_secs(45)),
            ("10m", Duration::from_secs(600)),
            ("1h30m", Duration::from_secs(5400)),
            ("1.5h", Duration::from_secs(5400)),
            ("+2m", Duration::from_secs(120)),
            (".5s", Duration::from_millis(500)),
            ("1h0m0s", Duration::from_secs(3600)),
            ("300ms", Duration::from_millis(300)),
            ("2us", Duration::from_micros(2)),
            ("2µs", Duration::from_micros(2)),
            ("7ns", Duration::from_nanos(7)),
            ("1m1.000000001s", Duration::new(61, 1)),
        ];
        for (text, expected) in cases {
            assert_eq!(parse(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn refuses_what_go_refuses() {
        for text in ["", "30", "1.2.3s", "m", ".s", "1d", "1 h", "+", "-"] {
            assert!(parse(text).is_err(), "{text:?} should be refused");
        }
        assert_eq!(
            parse("10x"),
            Err(DurationError::UnknownUnit {
                text: "10x".into(),
                unit: "x".into()
            })
        );
        assert_eq!(
            parse("15"),
            Err(DurationError::MissingUnit {
                text: "15".into(),
                number: "15".into()
            })
        );
    }

    #[test]
    fn refuses_negative_and_huge_values() {
        assert_eq!(parse("-1h"), Err(DurationError::Negative("-1h".into())));
        assert_eq!(parse("-0s"), Ok(Duration::ZERO));
        assert!(matches!(parse("3000000h"), Err(DurationError::Overflow(_))));
    }

    #[test]
    fn formats_like_go() {
        assert_eq!(format(Duration::from_secs(900)), "15m0s");
        assert_eq!(format(Duration::from_secs(5400)), "1h30m0s");
        assert_eq!(format(Duration::from_secs(45)), "45s");
        assert_eq!(format(Duration::from_millis(1500)), "1.5s");
    }
}
