//! Durations as scenario files and flags write them: `"5s"`, `"10m"`, `"250ms"`,
//! `"1m30s"`; a bare number is seconds. As a serde codec: `#[serde(with = "model::duration")]`.

use serde::{Deserialize, Deserializer, Serializer};
use std::time::Duration;

pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format(*d))
}

/// `d` as a scenario writes it, in its largest whole unit (`"10m"`, `"250ms"`).
pub fn format(d: Duration) -> String {
    let ms = d.as_millis();
    match ms {
        0 => "0s".to_string(),
        _ if ms.is_multiple_of(3_600_000) => format!("{}h", ms / 3_600_000),
        _ if ms.is_multiple_of(60_000) => format!("{}m", ms / 60_000),
        _ if ms.is_multiple_of(1000) => format!("{}s", ms / 1000),
        _ => format!("{ms}ms"),
    }
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(d)?;
    parse_duration(&text).map_err(serde::de::Error::custom)
}

/// Parses `"5s"`, `"1m30s"`, `"250ms"`; a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<f64>() {
        if let Ok(d) = Duration::try_from_secs_f64(secs) {
            return Ok(d);
        }
    }
    parse_units(text)
        .ok_or_else(|| format!("{text:?} is not a duration (examples: 5s, 250ms, 10m, 1h)"))
}

fn parse_units(text: &str) -> Option<Duration> {
    let mut total = Duration::ZERO;
    let mut rest = text;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let secs = match rest[..unit_len].trim() {
            "ms" => value / 1000.0,
            "s" | "sec" => value,
            "m" | "min" => value * 60.0,
            "h" => value * 3600.0,
            _ => return None,
        };
        // Beyond Duration's range (about 584 billion years) is not a duration either.
        total = total.checked_add(Duration::try_from_secs_f64(secs).ok()?)?;
        rest = &rest[unit_len..];
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        // Past Duration's range: an error, not a panic (found by the `scenario` fuzz target).
        for huge in [
            "1e300",
            "3333333333333333333333333330s",
            "18446744073709551615s18446744073709551615s",
        ] {
            assert!(parse_duration(huge).is_err(), "{huge}");
        }
    }
}
