//! The output options of an unload, defined once for every front end.
//!
//! The command line (`--no-header`, `--delimiter`, ...) and the Python
//! package (`header=False`, `delimiter=`, ...) offer the same options with
//! the same checks: which formats take which option, what a delimiter may
//! be, what the text for NULL may hold. Both fill an [`OutputOptions`] and
//! ask it for the [`Format`]; its refusals are one line in the command
//! line's words, which the Python package rewrites with the keywords
//! [`FORMAT_OPTIONS`] gives each flag.

use crate::format::columnar::{
    ArrowFormat, ParquetCompression, ParquetFormat, DEFAULT_GROUP_BYTES, DEFAULT_ROW_GROUP_ROWS,
};
use crate::format::csv::{BinaryEncoding, CsvFormat, CsvOptions};
use crate::format::jsonl::JsonLinesFormat;
use crate::format::Compression;
use crate::Format;

/// The output formats, by the name both front ends take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FormatName {
    #[default]
    Csv,
    Tsv,
    Jsonl,
    Parquet,
    Arrow,
}

impl FormatName {
    /// Every format, in the order messages list them.
    pub const ALL: [FormatName; 5] = [
        FormatName::Csv,
        FormatName::Tsv,
        FormatName::Jsonl,
        FormatName::Parquet,
        FormatName::Arrow,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FormatName::Csv => "csv",
            FormatName::Tsv => "tsv",
            FormatName::Jsonl => "jsonl",
            FormatName::Parquet => "parquet",
            FormatName::Arrow => "arrow",
        }
    }

    /// The format called `name`, or the line that lists the names.
    pub fn parse(name: &str) -> Result<FormatName, String> {
        Self::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| {
                format!(
                    "--format {}: use {}",
                    crate::printable(name),
                    listed(&Self::ALL)
                )
            })
    }
}

/// An option that only some formats take: its flag (without `--`), its
/// Python keyword, whether it is a switch (`--crlf`, `crlf=True`), the
/// formats that take it, and what to use instead where there is something.
pub struct FormatOption {
    pub flag: &'static str,
    pub keyword: &'static str,
    pub switch: bool,
    pub formats: &'static [FormatName],
    pub instead: &'static str,
}

use FormatName::{Arrow, Csv, Jsonl, Parquet, Tsv};

/// Every option that only some formats take.
pub const FORMAT_OPTIONS: &[FormatOption] = &[
    // A header line is the default: `--header` says so again, `--no-header`
    // (Python's `header=False`) leaves it out.
    option("header", "header", true, &[Csv, Tsv], ""),
    option("no-header", "header", true, &[Csv, Tsv], ""),
    option(
        "delimiter",
        "delimiter",
        false,
        &[Csv],
        "tsv always uses a tab",
    ),
    option("null", "null", false, &[Csv, Tsv], ""),
    option("crlf", "crlf", true, &[Csv, Tsv], ""),
    option("binary", "binary", false, &[Csv, Tsv, Jsonl], ""),
    // Python's one `compression` means either, by format.
    option(
        "compress",
        "compression",
        false,
        &[Csv, Tsv, Jsonl],
        "Parquet compresses its columns itself (--compression)",
    ),
    option("split", "split", true, &[Parquet], ""),
    option("row-group-rows", "row_group_rows", false, &[Parquet], ""),
    option(
        "compression",
        "compression",
        false,
        &[Parquet],
        "csv, tsv and jsonl files are compressed whole with --compress",
    ),
    option("decimal256", "decimal256", true, &[Parquet, Arrow], ""),
];

const fn option(
    flag: &'static str,
    keyword: &'static str,
    switch: bool,
    formats: &'static [FormatName],
    instead: &'static str,
) -> FormatOption {
    FormatOption {
        flag,
        keyword,
        switch,
        formats,
        instead,
    }
}

/// How a table is written: the format and the options that shape its
/// files. `None` and `false` are "not given": a format refuses only
/// options given to it.
#[derive(Debug, Clone, Default)]
pub struct OutputOptions {
    pub format: FormatName,
    /// csv, tsv: a first line of column names (`None`: the default, yes).
    /// Readers (pyarrow, polars, pandas, DuckDB) take a first line as the
    /// names, so a file without one loses a row to them.
    pub header: Option<bool>,
    /// One ASCII character, or `tab` (default `,`).
    pub delimiter: Option<String>,
    /// The text for NULL (default empty).
    pub null: Option<String>,
    pub crlf: bool,
    pub binary: Option<BinaryEncoding>,
    /// Compression of a whole csv, tsv or jsonl file.
    pub compress: Option<Compression>,
    /// Parquet: a directory of part files per table.
    pub split: bool,
    /// Parquet: rows per row group, exactly.
    pub row_group_rows: Option<usize>,
    /// Parquet: column compression (default zstd).
    pub compression: Option<ParquetCompression>,
    /// Read into Arrow's decimal256 ([`crate::TypeOptions::decimal256`]):
    /// checked here, set on the run by the caller.
    pub decimal256: bool,
}

impl OutputOptions {
    fn given(&self, flag: &str) -> bool {
        match flag {
            "header" => self.header == Some(true),
            "no-header" => self.header == Some(false),
            "delimiter" => self.delimiter.is_some(),
            "null" => self.null.is_some(),
            "crlf" => self.crlf,
            "binary" => self.binary.is_some(),
            "compress" => self.compress.is_some(),
            "split" => self.split,
            "row-group-rows" => self.row_group_rows.is_some(),
            "compression" => self.compression.is_some(),
            "decimal256" => self.decimal256,
            _ => false,
        }
    }

    /// The first format option given, if any (its flag without `--`).
    pub fn first_given(&self) -> Option<&'static str> {
        FORMAT_OPTIONS
            .iter()
            .map(|o| o.flag)
            .find(|flag| self.given(flag))
    }

    /// The first option given that the format does not take, as the line
    /// that refuses it: "--header is for --format csv or tsv, not parquet".
    pub fn misplaced(&self) -> Option<String> {
        FORMAT_OPTIONS.iter().find_map(|option| {
            if option.formats.contains(&self.format) || !self.given(option.flag) {
                return None;
            }
            let instead = if option.instead.is_empty() {
                String::new()
            } else {
                format!("; {}", option.instead)
            };
            Some(format!(
                "--{} is for --format {}, not {}{instead}",
                option.flag,
                listed(option.formats),
                self.format.name()
            ))
        })
    }

    /// The format these options ask for, or the one line that refuses them.
    pub fn to_format(&self) -> Result<Format, String> {
        if let Some(refusal) = self.misplaced() {
            return Err(refusal);
        }
        if self.row_group_rows == Some(0) {
            return Err("--row-group-rows 0: a row group holds one row at least".into());
        }
        let binary = self.binary.unwrap_or(BinaryEncoding::Hex);
        let csv = CsvOptions {
            // TSV is CSV with a tab (--delimiter is refused with it).
            delimiter: match (self.format, &self.delimiter) {
                (FormatName::Tsv, _) => b'\t',
                (_, Some(d)) => delimiter_byte(d)?,
                (_, None) => b',',
            },
            header: self.header.unwrap_or(true),
            null: self.null.clone().unwrap_or_default(),
            binary,
            crlf: self.crlf,
        };
        csv.validate()?;
        let format = match self.format {
            FormatName::Csv => Format::bytes(CsvFormat::new(csv)),
            FormatName::Tsv => Format::bytes(CsvFormat::tsv(csv)),
            FormatName::Jsonl => Format::bytes(JsonLinesFormat::new(binary)),
            FormatName::Parquet => Format::batches(ParquetFormat {
                compression: self.compression.unwrap_or_default(),
                split: self.split,
                row_group_rows: self.row_group_rows.unwrap_or(DEFAULT_ROW_GROUP_ROWS),
                // Rows chosen are rows kept: the byte cap is the default's.
                row_group_bytes: self.row_group_rows.is_none().then_some(DEFAULT_GROUP_BYTES),
            }),
            FormatName::Arrow => Format::batches(ArrowFormat),
        };
        Ok(match format {
            Format::Bytes { format, .. } => Format::Bytes {
                format,
                compression: self.compress,
            },
            format => format,
        })
    }
}

/// `--delimiter`: one ASCII character other than a quote or line break,
/// or `tab`.
fn delimiter_byte(text: &str) -> Result<u8, String> {
    match text {
        "tab" | "\\t" | "\t" => Ok(b'\t'),
        d if d.len() == 1 && d != "\"" && d != "\n" && d != "\r" => Ok(d.as_bytes()[0]),
        d => Err(format!(
            "--delimiter '{}': use one ASCII character other than a quote or line break, or 'tab'",
            crate::printable(d)
        )),
    }
}

/// `csv, tsv or jsonl`.
fn listed(formats: &[FormatName]) -> String {
    let names: Vec<&str> = formats.iter().map(|f| f.name()).collect();
    match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_option_of_another_format_is_refused_in_one_line() {
        let header = OutputOptions {
            format: FormatName::Parquet,
            header: Some(true),
            ..OutputOptions::default()
        };
        assert_eq!(
            header.to_format().err().unwrap(),
            "--header is for --format csv or tsv, not parquet"
        );
        let no_header = OutputOptions {
            format: FormatName::Arrow,
            header: Some(false),
            ..OutputOptions::default()
        };
        assert_eq!(
            no_header.misplaced().unwrap(),
            "--no-header is for --format csv or tsv, not arrow"
        );
        let delimiter = OutputOptions {
            format: FormatName::Tsv,
            delimiter: Some(";".into()),
            ..OutputOptions::default()
        };
        assert_eq!(
            delimiter.misplaced().unwrap(),
            "--delimiter is for --format csv, not tsv; tsv always uses a tab"
        );
        let rows = OutputOptions {
            row_group_rows: Some(10),
            ..OutputOptions::default()
        };
        assert_eq!(
            rows.misplaced().unwrap(),
            "--row-group-rows is for --format parquet, not csv"
        );
    }

    #[test]
    fn every_format_option_is_one_the_options_know() {
        for option in FORMAT_OPTIONS {
            let format = FormatName::ALL
                .into_iter()
                .find(|f| !option.formats.contains(f))
                .unwrap();
            let mut given = OutputOptions {
                format,
                ..OutputOptions::default()
            };
            match option.flag {
                "header" => given.header = Some(true),
                "no-header" => given.header = Some(false),
                "delimiter" => given.delimiter = Some(";".into()),
                "null" => given.null = Some("N".into()),
                "crlf" => given.crlf = true,
                "binary" => given.binary = Some(BinaryEncoding::Base64),
                "compress" => given.compress = Some(Compression::Gzip),
                "split" => given.split = true,
                "row-group-rows" => given.row_group_rows = Some(5),
                "compression" => given.compression = Some(ParquetCompression::Snappy),
                "decimal256" => given.decimal256 = true,
                other => panic!("{other} is not an OutputOptions field"),
            }
            let refusal = given.misplaced().unwrap();
            assert!(
                refusal.starts_with(&format!("--{} ", option.flag)),
                "{refusal}"
            );
        }
    }

    /// The header line `format` opens a table of columns A and B with.
    fn header_of(options: OutputOptions) -> String {
        let schema = arrow_schema::Schema::new(vec![
            arrow_schema::Field::new("A", arrow_schema::DataType::Int32, true),
            arrow_schema::Field::new("B", arrow_schema::DataType::Utf8, true),
        ]);
        match options.to_format().unwrap() {
            Format::Bytes { format, .. } => String::from_utf8(format.header(&schema)).unwrap(),
            Format::Batches(_) => panic!("not a text format"),
        }
    }

    #[test]
    fn csv_and_tsv_have_a_header_unless_told_not_to() {
        assert_eq!(header_of(OutputOptions::default()), "A,B\n");
        let tsv = OutputOptions {
            format: FormatName::Tsv,
            ..OutputOptions::default()
        };
        assert_eq!(header_of(tsv.clone()), "A\tB\n");
        let said = OutputOptions {
            header: Some(true),
            ..tsv.clone()
        };
        assert_eq!(header_of(said), "A\tB\n");
        let none = OutputOptions {
            header: Some(false),
            ..tsv
        };
        assert_eq!(header_of(none), "");
    }

    #[test]
    fn formats_and_delimiters_are_checked_by_name() {
        assert_eq!(FormatName::parse("arrow").unwrap(), FormatName::Arrow);
        assert_eq!(
            FormatName::parse("parqet").unwrap_err(),
            "--format parqet: use csv, tsv, jsonl, parquet or arrow"
        );
        let bad = OutputOptions {
            delimiter: Some("ab".into()),
            ..OutputOptions::default()
        };
        assert!(bad
            .to_format()
            .err()
            .unwrap()
            .starts_with("--delimiter 'ab': "));
        let null = OutputOptions {
            null: Some("a,b".into()),
            ..OutputOptions::default()
        };
        assert!(null.to_format().err().unwrap().starts_with("--null "));
    }
}
