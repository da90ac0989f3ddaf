//! Value formatting shared by the text formats: exact decimals, dates and
//! times in ISO 8601 order, floats as their shortest round-trip text, hex.
//!
//! It lives apart from CSV so that every text format (JSON Lines next)
//! writes a value the same way. Every function appends to a byte buffer and
//! allocates nothing, because it runs once per value of a multi-GB unload.

/// Writes `value / 10^scale` exactly, with `scale` digits after the point:
/// `-0.05`, `1.00`, `12`. Never goes through a float; i128::MIN works
/// because the digits come from the unsigned magnitude. A negative scale
/// (which Arrow allows, Firebird never makes) appends zeros.
pub fn decimal(out: &mut Vec<u8>, value: i128, scale: i8) {
    let mut digits = itoa::Buffer::new();
    decimal_digits(out, value < 0, digits.format(value.unsigned_abs()), scale);
}

/// [`decimal`] for a wider integer, given as its sign and the decimal
/// digits of its magnitude.
pub fn decimal_digits(out: &mut Vec<u8>, negative: bool, text: &str, scale: i8) {
    if negative {
        out.push(b'-');
    }
    if scale <= 0 {
        out.extend_from_slice(text.as_bytes());
        if text.bytes().any(|b| b != b'0') {
            out.resize(out.len() + scale.unsigned_abs() as usize, b'0');
        }
        return;
    }
    let scale = scale as usize;
    let text = text.as_bytes();
    if text.len() <= scale {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + scale - text.len(), b'0');
        out.extend_from_slice(text);
    } else {
        let (int, frac) = text.split_at(text.len() - scale);
        out.extend_from_slice(int);
        out.push(b'.');
        out.extend_from_slice(frac);
    }
}

/// The shortest text that parses back to the same `f64`, or `NaN`,
/// `Infinity`, `-Infinity` (the spellings JSON-ish and SQL tools accept,
/// rather than ryu's `inf`).
pub fn float64(out: &mut Vec<u8>, v: f64) {
    if v.is_finite() {
        out.extend_from_slice(ryu::Buffer::new().format_finite(v).as_bytes());
    } else {
        non_finite(out, v.is_nan(), v > 0.0);
    }
}

/// As [`float64`], but shortest for the `f32` itself: `0.1`, not the
/// `0.10000000149011612` a widening to `f64` would give.
pub fn float32(out: &mut Vec<u8>, v: f32) {
    if v.is_finite() {
        out.extend_from_slice(ryu::Buffer::new().format_finite(v).as_bytes());
    } else {
        non_finite(out, v.is_nan(), v > 0.0);
    }
}

fn non_finite(out: &mut Vec<u8>, nan: bool, positive: bool) {
    out.extend_from_slice(match (nan, positive) {
        (true, _) => b"NaN".as_slice(),
        (false, true) => b"Infinity",
        (false, false) => b"-Infinity",
    });
}

/// The proleptic Gregorian date of a day count since 1970-01-01
/// (the civil-from-days algorithm: eras of 400 years, March-based years).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = year_of_era + era * 400 + if month <= 2 { 1 } else { 0 };
    (year, month, day)
}

/// `YYYY-MM-DD` for days since 1970-01-01, the year zero-padded to 4
/// digits. Years outside Firebird's 1..=9999 are written astronomically
/// (`0000`, `-0001`, `10000`) rather than refused.
pub fn date(out: &mut Vec<u8>, days: i64) {
    let (year, month, day) = civil_from_days(days);
    if year < 0 {
        out.push(b'-');
    }
    padded(out, year.unsigned_abs(), 4);
    out.push(b'-');
    padded(out, month as u64, 2);
    out.push(b'-');
    padded(out, day as u64, 2);
}

/// `HH:MM:SS.ffff` for microseconds since midnight. Firebird keeps
/// 1/10 000 s, so the fraction is always 4 digits and finer digits (which
/// the decoder never produces) are dropped, not rounded, so a value cannot
/// roll over into the next second. Out-of-day values wrap.
pub fn time(out: &mut Vec<u8>, micros: i64) {
    let micros = micros.rem_euclid(86_400_000_000) as u64;
    let secs = micros / 1_000_000;
    padded(out, secs / 3600, 2);
    out.push(b':');
    padded(out, secs / 60 % 60, 2);
    out.push(b':');
    padded(out, secs % 60, 2);
    out.push(b'.');
    padded(out, micros % 1_000_000 / 100, 4);
}

/// `YYYY-MM-DD HH:MM:SS.ffff` for microseconds since the Unix epoch.
pub fn timestamp(out: &mut Vec<u8>, micros: i64) {
    const DAY: i64 = 86_400_000_000;
    date(out, micros.div_euclid(DAY));
    out.push(b' ');
    time(out, micros.rem_euclid(DAY));
}

/// Two lowercase hex digits per byte.
const HEX: &[u8; 16] = b"0123456789abcdef";

/// Lowercase hex, two digits per byte: `00ff10`.
pub fn hex(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len() * 2);
    for b in bytes {
        out.push(HEX[(b >> 4) as usize]);
        out.push(HEX[(b & 15) as usize]);
    }
}

/// `value` left-padded with zeros to `width` digits (wider values kept whole).
fn padded(out: &mut Vec<u8>, value: u64, width: usize) {
    let mut buf = itoa::Buffer::new();
    let text = buf.format(value);
    out.resize(out.len() + width.saturating_sub(text.len()), b'0');
    out.extend_from_slice(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut out = Vec::new();
        f(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn decimals_are_exact() {
        assert_eq!(s(|o| decimal(o, 1, 2)), "0.01");
        assert_eq!(s(|o| decimal(o, -5, 2)), "-0.05");
        assert_eq!(s(|o| decimal(o, 100, 2)), "1.00");
        assert_eq!(s(|o| decimal(o, -12345, 0)), "-12345");
        assert_eq!(
            s(|o| decimal(o, i128::MAX, 10)),
            "17014118346046923173168730371.5884105727"
        );
        assert_eq!(
            s(|o| decimal(o, i128::MIN, 0)),
            "-170141183460469231731687303715884105728"
        );
        assert_eq!(
            s(|o| decimal(o, i128::MIN, 4)),
            "-17014118346046923173168730371588410.5728"
        );
        assert_eq!(
            s(|o| decimal(o, i128::MIN, 38)),
            "-1.70141183460469231731687303715884105728"
        );
        assert_eq!(s(|o| decimal(o, 12, 38)), format!("0.{}12", "0".repeat(36)));
        assert_eq!(s(|o| decimal(o, 0, 3)), "0.000");
        assert_eq!(s(|o| decimal(o, 123, 3)), "0.123");
        assert_eq!(s(|o| decimal(o, 1234, 3)), "1.234");
        assert_eq!(s(|o| decimal(o, -12, -2)), "-1200");
        assert_eq!(s(|o| decimal(o, 0, -2)), "0");
        // Wider integers come as sign and digits.
        assert_eq!(s(|o| decimal_digits(o, true, "123456", 2)), "-1234.56");
        assert_eq!(s(|o| decimal_digits(o, false, "5", 3)), "0.005");
        assert_eq!(s(|o| decimal(o, 0, -2)), "0");
    }

    #[test]
    fn floats_round_trip_in_their_own_width() {
        assert_eq!(s(|o| float32(o, 0.1)), "0.1");
        assert_eq!(s(|o| float64(o, 0.1)), "0.1");
        assert_eq!(s(|o| float64(o, 1e-300)), "1e-300");
        assert_eq!(s(|o| float64(o, 5e-324)), "5e-324");
        assert_eq!(s(|o| float64(o, -0.0)), "-0.0");
        // The largest subnormal.
        let subnormal = f64::from_bits(0x000f_ffff_ffff_ffff);
        assert_eq!(s(|o| float64(o, subnormal)), "2.225073858507201e-308");
        assert_eq!(
            s(|o| float64(o, subnormal)).parse::<f64>().unwrap(),
            subnormal
        );
        assert_eq!(s(|o| float64(o, f64::MIN)), "-1.7976931348623157e308");
        assert_eq!(s(|o| float64(o, 1e16)), "1e16");
        assert_eq!(s(|o| float64(o, 123.0)), "123.0");
        assert_eq!(s(|o| float32(o, 1e-45)), "1e-45");
        assert_eq!(s(|o| float32(o, f32::NAN)), "NaN");
        assert_eq!(s(|o| float32(o, f32::INFINITY)), "Infinity");
        assert_eq!(s(|o| float64(o, -f64::NAN)), "NaN");
        assert_eq!(s(|o| float64(o, f64::NAN)), "NaN");
        assert_eq!(s(|o| float32(o, f32::NEG_INFINITY)), "-Infinity");
        assert_eq!(s(|o| float64(o, f64::INFINITY)), "Infinity");
        let text = s(|o| float32(o, 3.4e38));
        assert_eq!(text.parse::<f32>().unwrap(), 3.4e38);
    }

    #[test]
    fn dates_across_firebirds_range() {
        assert_eq!(s(|o| date(o, 0)), "1970-01-01");
        assert_eq!(s(|o| date(o, -40_587)), "1858-11-17");
        assert_eq!(s(|o| date(o, 11_016)), "2000-02-29");
        assert_eq!(s(|o| date(o, -719_162)), "0001-01-01");
        assert_eq!(s(|o| date(o, 2_932_896)), "9999-12-31");
    }

    #[test]
    fn civil_from_days_matches_a_day_by_day_calendar() {
        // Walk every day of Firebird's range with a naive calendar.
        let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let month_len = |y: i64, m: u32| match m {
            2 if leap(y) => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        let (mut y, mut m, mut d) = (1i64, 1u32, 1u32);
        for days in -719_162..=2_932_896 {
            assert_eq!(civil_from_days(days), (y, m, d), "day {days}");
            d += 1;
            if d > month_len(y, m) {
                d = 1;
                m += 1;
                if m > 12 {
                    m = 1;
                    y += 1;
                }
            }
        }
        assert_eq!((y, m, d), (10_000, 1, 1));
        assert_eq!(s(|o| date(o, -719_163)), "0000-12-31");
        assert_eq!(s(|o| date(o, 2_932_897)), "10000-01-01");
    }

    #[test]
    fn times_have_four_fraction_digits() {
        assert_eq!(s(|o| time(o, 0)), "00:00:00.0000");
        assert_eq!(s(|o| time(o, 86_399_999_900)), "23:59:59.9999");
        assert_eq!(s(|o| time(o, 45_296_789_999)), "12:34:56.7899");
        assert_eq!(s(|o| timestamp(o, -1)), "1969-12-31 23:59:59.9999");
        assert_eq!(
            s(|o| timestamp(o, -62_135_596_800_000_000)),
            "0001-01-01 00:00:00.0000"
        );
        assert_eq!(
            s(|o| timestamp(o, 253_402_300_799_999_900)),
            "9999-12-31 23:59:59.9999"
        );
    }

    #[test]
    fn hex_is_lowercase() {
        assert_eq!(s(|o| hex(o, &[0, 0xff, 0x10])), "00ff10");
    }
}
