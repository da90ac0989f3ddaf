//! Column defaults by the column's type: Firebird's moving date and time
//! words (`'NOW'`, `'TODAY'`, `'TOMORROW'`, `'YESTERDAY'`) are strings
//! that the column's type turns into a moment each time a row is
//! inserted; written as PostgreSQL string constants they would be turned
//! into one fixed moment when the default is created. So they become
//! PostgreSQL's own expressions of the same moment for that type, and
//! stay plain text in a text column. A default that means something else
//! in PostgreSQL is reported, never written.

use crate::ddl::constant_default;

/// The PostgreSQL default of a column of Firebird type `data_type`
/// (`DATE`, `TIMESTAMP WITH TIME ZONE`, `VARCHAR(10) CHARACTER SET
/// UTF8`) whose catalog default is `default` (`DEFAULT 'TODAY'`), or why
/// there is none.
pub fn typed_default(default: &str, data_type: &str) -> Result<String, String> {
    let text = default.trim();
    let value = match text.get(..7) {
        Some(k) if k.eq_ignore_ascii_case("DEFAULT") => text[7..].trim(),
        _ => text,
    };
    let kind = Temporal::of(data_type);
    let word = value
        .strip_prefix('\'')
        .and_then(|v| v.strip_suffix('\''))
        .map(|v| v.trim().to_ascii_uppercase());
    if let (Some(kind), Some(word)) = (kind, word.as_deref()) {
        return match moving(kind, word) {
            Some(Moving::Is(sql)) => Ok(sql),
            Some(Moving::None) => Err(format!(
                "'{word}' has no meaning for a {} column",
                data_type.to_ascii_uppercase()
            )),
            None if fixed_literal(kind, word) => {
                constant_default(default).ok_or_else(|| "not a constant".into())
            }
            None => Err(format!(
                "a {} written as Firebird reads it; PostgreSQL could read it otherwise",
                kind.noun()
            )),
        };
    }
    constant_default(default).ok_or_else(|| "not a constant".into())
}

/// The date and time types a string default is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Temporal {
    Date,
    Time,
    TimeTz,
    Timestamp,
    TimestampTz,
}

impl Temporal {
    fn of(data_type: &str) -> Option<Temporal> {
        let upper = data_type.trim().to_ascii_uppercase();
        // ARRAY columns (`DATE [1:3]`) have no such defaults.
        if upper.contains('[') {
            return None;
        }
        Some(match upper.as_str() {
            "DATE" => Temporal::Date,
            "TIME" | "TIME WITHOUT TIME ZONE" => Temporal::Time,
            "TIME WITH TIME ZONE" => Temporal::TimeTz,
            "TIMESTAMP" | "TIMESTAMP WITHOUT TIME ZONE" => Temporal::Timestamp,
            "TIMESTAMP WITH TIME ZONE" => Temporal::TimestampTz,
            _ => return None,
        })
    }

    fn noun(self) -> &'static str {
        match self {
            Temporal::Date => "date",
            Temporal::Time | Temporal::TimeTz => "time",
            Temporal::Timestamp | Temporal::TimestampTz => "timestamp",
        }
    }

    fn pg_type(self) -> &'static str {
        match self {
            Temporal::Date => "date",
            Temporal::Time => "time",
            Temporal::TimeTz => "time with time zone",
            Temporal::Timestamp => "timestamp",
            Temporal::TimestampTz => "timestamp with time zone",
        }
    }
}

enum Moving {
    Is(String),
    /// A word Firebird refuses for this type.
    None,
}

/// `'NOW'`, `'TODAY'`, `'TOMORROW'`, `'YESTERDAY'` for a column of type
/// `kind`; `None` for any other text.
fn moving(kind: Temporal, word: &str) -> Option<Moving> {
    let days = match word {
        "NOW" => {
            return Some(Moving::Is(
                match kind {
                    Temporal::Date => "CURRENT_DATE",
                    Temporal::Time => "LOCALTIME",
                    Temporal::TimeTz => "CURRENT_TIME",
                    Temporal::Timestamp => "LOCALTIMESTAMP",
                    Temporal::TimestampTz => "CURRENT_TIMESTAMP",
                }
                .into(),
            ));
        }
        "TODAY" => 0,
        "TOMORROW" => 1,
        "YESTERDAY" => -1,
        _ => return None,
    };
    let date = match days {
        0 => "CURRENT_DATE".to_string(),
        1 => "(CURRENT_DATE + 1)".to_string(),
        _ => "(CURRENT_DATE - 1)".to_string(),
    };
    Some(match kind {
        Temporal::Date => Moving::Is(date),
        // Midnight of that day, as Firebird makes it.
        Temporal::Timestamp | Temporal::TimestampTz => {
            Moving::Is(format!("CAST({date} AS {})", kind.pg_type()))
        }
        Temporal::Time | Temporal::TimeTz => Moving::None,
    })
}

/// A fixed date or time written the one way both read alike: ISO
/// `YYYY-MM-DD`, `HH:MM[:SS[.f]]`, or both with a space.
fn fixed_literal(kind: Temporal, text: &str) -> bool {
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    let date = |s: &str| {
        let parts: Vec<&str> = s.split('-').collect();
        parts.len() == 3 && digits(parts[0], 4) && digits(parts[1], 2) && digits(parts[2], 2)
    };
    let time = |s: &str| {
        let (clock, fraction) = s.split_once('.').unwrap_or((s, "0"));
        let parts: Vec<&str> = clock.split(':').collect();
        (2..=3).contains(&parts.len())
            && parts.iter().all(|p| digits(p, 2))
            && (1..=4).contains(&fraction.len())
            && fraction.bytes().all(|b| b.is_ascii_digit())
    };
    match kind {
        Temporal::Date => date(text),
        Temporal::Time => time(text),
        Temporal::Timestamp => match text.split_once(' ') {
            Some((d, t)) => date(d) && time(t),
            None => date(text),
        },
        // A zone would be read as the session's where it is left out.
        Temporal::TimeTz | Temporal::TimestampTz => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moving_words_keep_moving_by_the_column_type() {
        let d = |default: &str, t: &str| typed_default(default, t);
        assert_eq!(d("DEFAULT 'TODAY'", "DATE").unwrap(), "CURRENT_DATE");
        assert_eq!(d("default 'today'", "DATE").unwrap(), "CURRENT_DATE");
        assert_eq!(
            d("DEFAULT 'TOMORROW'", "DATE").unwrap(),
            "(CURRENT_DATE + 1)"
        );
        assert_eq!(
            d("DEFAULT 'YESTERDAY'", "TIMESTAMP").unwrap(),
            "CAST((CURRENT_DATE - 1) AS timestamp)"
        );
        assert_eq!(d("DEFAULT 'NOW'", "TIMESTAMP").unwrap(), "LOCALTIMESTAMP");
        assert_eq!(
            d("DEFAULT 'NOW'", "TIMESTAMP WITH TIME ZONE").unwrap(),
            "CURRENT_TIMESTAMP"
        );
        assert_eq!(d("DEFAULT 'NOW'", "DATE").unwrap(), "CURRENT_DATE");
        assert_eq!(d("DEFAULT 'NOW'", "TIME").unwrap(), "LOCALTIME");
        // Text stays text.
        assert_eq!(d("DEFAULT 'NOW'", "VARCHAR(10)").unwrap(), "E'NOW'");
        assert_eq!(
            d("DEFAULT 'TODAY'", "CHAR(5) CHARACTER SET UTF8").unwrap(),
            "E'TODAY'"
        );
        // No equivalent: reported.
        assert!(d("DEFAULT 'TOMORROW'", "TIME").is_err());
        assert!(d("DEFAULT '01.02.2020'", "DATE").is_err());
        assert!(d("DEFAULT '2020-01-02 10:00'", "TIMESTAMP WITH TIME ZONE").is_err());
        assert_eq!(
            d("DEFAULT '2020-01-02 10:00:00.5'", "TIMESTAMP").unwrap(),
            "E'2020-01-02 10:00:00.5'"
        );
        assert_eq!(d("DEFAULT CURRENT_DATE", "DATE").unwrap(), "CURRENT_DATE");
        assert_eq!(d("DEFAULT 3", "INTEGER").unwrap(), "3");
        assert!(d("DEFAULT GEN_ID(G, 1)", "INTEGER").is_err());
    }
}
