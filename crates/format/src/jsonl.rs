//! JSON Lines: one JSON object per row, keys in column order.
//!
//! Values render exactly as in CSV (see [`crate::csv`]) and are then written
//! as JSON: integers, finite floats and booleans as JSON literals; NULL as
//! `null`; everything else as a JSON string — dates and times, text,
//! binary (hex or base64), and also NUMERIC/DECIMAL, INT128 and DECFLOAT,
//! which are exact decimal text: as JSON numbers, most readers would parse
//! them into doubles and round them. Non-finite floats, which JSON cannot
//! express as numbers, become the strings `"NaN"`, `"Infinity"`,
//! `"-Infinity"`. Strings escape `"`, `\` and control characters; other
//! characters are written as UTF-8.

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};

use crate::values::{batch_columns, json_string, BinaryEncoding};
use crate::{BatchEncoder, ByteFormat, FormatError, RecordScanner, Setting};

/// The JSON Lines format.
#[derive(Debug, Clone)]
pub struct JsonLinesFormat {
    binary: BinaryEncoding,
}

impl JsonLinesFormat {
    pub fn new(binary: BinaryEncoding) -> Self {
        JsonLinesFormat { binary }
    }
}

impl ByteFormat for JsonLinesFormat {
    fn extension(&self) -> &str {
        "jsonl"
    }

    fn header(&self, _schema: &Schema) -> Vec<u8> {
        Vec::new()
    }

    fn encoder(&self, schema: SchemaRef) -> Box<dyn BatchEncoder> {
        // Each key, with its quotes and colon, is escaped once per unit.
        let keys = schema
            .fields()
            .iter()
            .map(|f| {
                let mut key = Vec::new();
                json_string(&mut key, f.name().as_bytes());
                key.push(b':');
                key
            })
            .collect();
        Box::new(JsonLinesEncoder {
            schema,
            keys,
            binary: self.binary,
            scratch: Vec::new(),
        })
    }

    fn records(&self) -> RecordScanner {
        RecordScanner::Lines
    }

    fn settings(&self) -> Vec<(&'static str, Setting)> {
        vec![("binary", Setting::Text(self.binary.name().into()))]
    }
}

struct JsonLinesEncoder {
    schema: SchemaRef,
    keys: Vec<Vec<u8>>,
    binary: BinaryEncoding,
    scratch: Vec<u8>,
}

impl BatchEncoder for JsonLinesEncoder {
    fn encode(&mut self, batch: &RecordBatch, out: &mut Vec<u8>) -> Result<(), FormatError> {
        let columns = batch_columns(&self.schema, batch)?;
        for row in 0..batch.num_rows() {
            out.push(b'{');
            for (c, (nulls, column)) in columns.iter().enumerate() {
                if c > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(&self.keys[c]);
                if nulls.is_some_and(|n| n.is_null(row)) {
                    out.extend_from_slice(b"null");
                    continue;
                }
                // Text and binary (blobs of any size) go straight into
                // `out`; only short renderings pass through `scratch`.
                if let Some(text) = column.text(row) {
                    json_string(out, text);
                } else if column.is_binary() {
                    // Hex and base64 need no escapes.
                    out.push(b'"');
                    column.render(row, self.binary, out);
                    out.push(b'"');
                } else if column.is_json_literal(row) {
                    column.render(row, self.binary, out);
                } else {
                    self.scratch.clear();
                    column.render(row, self.binary, &mut self.scratch);
                    json_string(out, &self.scratch);
                }
            }
            out.extend_from_slice(b"}\n");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{
        ArrayRef, BooleanArray, Decimal128Array, Float64Array, Int32Array, StringArray,
    };
    use arrow_schema::Field;
    use std::sync::Arc;

    #[test]
    fn rows_become_objects_with_exact_decimals_and_escaped_strings() {
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("id", Arc::new(Int32Array::from(vec![Some(1), None]))),
            (
                "amount",
                Arc::new(
                    Decimal128Array::from(vec![Some(-5), Some(123456789012345678)])
                        .with_precision_and_scale(19, 2)
                        .unwrap(),
                ),
            ),
            ("x", Arc::new(Float64Array::from(vec![0.1, f64::NAN]))),
            ("ok", Arc::new(BooleanArray::from(vec![Some(true), None]))),
            (
                "My \"key\"",
                Arc::new(StringArray::from(vec![Some("a\"b\\c\nd\u{1}é"), Some("")])),
            ),
        ];
        let schema = Arc::new(Schema::new(
            columns
                .iter()
                .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
                .collect::<Vec<_>>(),
        ));
        let batch = RecordBatch::try_new(
            schema.clone(),
            columns.into_iter().map(|(_, a)| a).collect(),
        )
        .unwrap();
        let mut out = JsonLinesFormat::new(BinaryEncoding::Hex).header(&schema);
        JsonLinesFormat::new(BinaryEncoding::Hex)
            .encoder(schema)
            .encode(&batch, &mut out)
            .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"id\":1,\"amount\":\"-0.05\",\"x\":0.1,\"ok\":true,\"My \\\"key\\\"\":\"a\\\"b\\\\c\\nd\\u0001é\"}\n\
             {\"id\":null,\"amount\":\"1234567890123456.78\",\"x\":\"NaN\",\"ok\":null,\"My \\\"key\\\"\":\"\"}\n"
        );
    }
}
