//! The connection's metadata calls, from the facade's plan.
//!
//! Firebird (before 6) has neither catalogs nor schemas: `GetObjects`
//! returns one catalog and one schema, both named NULL, holding the user
//! tables (`TABLE`) and views (`VIEW`) the facade plans, with their
//! columns: name, position, declared type (`xdbc_type_name`, as
//! `NUMERIC(9,3)`) and nullability, the other `xdbc_*` fields NULL; and,
//! with the columns, each table's PRIMARY KEY, UNIQUE, FOREIGN KEY (with
//! the columns it references) and CHECK constraints, from
//! `RDB$RELATION_CONSTRAINTS`, read at a snapshot as any query is. Table name patterns are ADBC's (`%`, `_`), which
//! mean the same in Firebird's `SIMILAR TO`, so they filter in the
//! catalog query itself.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use adbc_core::error::{Error, Result, Status};
use adbc_core::options::{InfoCode, ObjectDepth};
use adbc_core::schemas::{
    COLUMN_SCHEMA, CONSTRAINT_SCHEMA, GET_INFO_SCHEMA, GET_OBJECTS_SCHEMA, GET_TABLE_TYPES_SCHEMA,
    TABLE_SCHEMA, USAGE_SCHEMA,
};
use arrow_array::cast::AsArray;
use arrow_array::{
    new_empty_array, new_null_array, Array, ArrayRef, Int16Array, Int32Array, ListArray,
    RecordBatch, StringArray, StructArray, UnionArray,
};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Schema, SchemaRef};
use fbunload::Kind;

use crate::{from_run, Read, Settings};

/// The table types `GetTableTypes` lists and `GetObjects` filters by.
const TABLE_TYPES: [&str; 2] = ["TABLE", "VIEW"];

/// `GetObjects`' filters, as the caller gave them.
pub(crate) struct ObjectFilter<'a> {
    pub catalog: Option<&'a str>,
    pub db_schema: Option<&'a str>,
    pub table_name: Option<&'a str>,
    pub table_type: Option<Vec<&'a str>>,
    pub column_name: Option<&'a str>,
}

pub(crate) fn table_types() -> Result<RecordBatch> {
    let types: ArrayRef = Arc::new(StringArray::from(TABLE_TYPES.to_vec()));
    Ok(RecordBatch::try_new(
        GET_TABLE_TYPES_SCHEMA.clone(),
        vec![types],
    )?)
}

/// The Arrow schema `SELECT * FROM table_name` returns: a table's, else a
/// view's.
pub(crate) fn table_schema(settings: &Settings, table_name: &str) -> Result<Schema> {
    let pattern = fbunload::exact_pattern(table_name);
    for unload in [
        settings.unload()?.tables(pattern.clone()),
        settings.unload()?.views(pattern.clone()),
    ] {
        match unload.prepare() {
            // As the query reads it, computed columns included (module read).
            Ok(prepared) if !prepared.plan.tables[0].computed.is_empty() => {
                return Read::whole_table(table_name).schema(settings);
            }
            Ok(prepared) => return Ok(prepared.schemas[0].as_ref().clone()),
            Err(e) if is_nothing_found(&e) => continue,
            Err(e) => return Err(from_run(e)),
        }
    }
    Err(Error::with_message_and_status(
        format!(
            "no table or view {} (names are case-sensitive)",
            fbunload::printable(table_name)
        ),
        Status::NotFound,
    ))
}

fn is_nothing_found(err: &fbunload::Error) -> bool {
    matches!(
        err,
        fbunload::Error::Catalog(fbunload::CatalogError::NoTables(_))
    )
}

/// `GetInfo`: the driver's name and versions, and the vendor's name.
pub(crate) fn info(codes: Option<HashSet<InfoCode>>) -> Result<RecordBatch> {
    let known: [(InfoCode, InfoValue); 6] = [
        (InfoCode::VendorName, InfoValue::Text("Firebird".into())),
        (InfoCode::VendorSql, InfoValue::Flag(true)),
        (
            InfoCode::DriverName,
            InfoValue::Text("ADBC fbunload driver".into()),
        ),
        (
            InfoCode::DriverVersion,
            InfoValue::Text(env!("CARGO_PKG_VERSION").into()),
        ),
        (InfoCode::DriverArrowVersion, InfoValue::Text("60".into())),
        // ADBC 1.1.0, as adbc_ffi exports the driver.
        (InfoCode::DriverAdbcVersion, InfoValue::Int(1_001_000)),
    ];
    let chosen: Vec<&(InfoCode, InfoValue)> = known
        .iter()
        .filter(|(code, _)| codes.as_ref().is_none_or(|c| c.contains(code)))
        .collect();
    let names: Vec<u32> = chosen.iter().map(|(code, _)| u32::from(code)).collect();
    let DataType::Union(fields, _) = GET_INFO_SCHEMA.field(1).data_type().clone() else {
        unreachable!("ADBC's info_value is a union");
    };
    let mut texts = Vec::new();
    let mut flags = Vec::new();
    let mut ints = Vec::new();
    let mut type_ids = Vec::new();
    let mut offsets = Vec::new();
    for (_, value) in &chosen {
        let (id, offset) = match value {
            InfoValue::Text(s) => (0, push(&mut texts, s.clone())),
            InfoValue::Flag(b) => (1, push(&mut flags, *b)),
            InfoValue::Int(i) => (2, push(&mut ints, *i)),
        };
        type_ids.push(id);
        offsets.push(offset);
    }
    let children: Vec<ArrayRef> = fields
        .iter()
        .map(|(id, field)| match id {
            0 => Arc::new(StringArray::from(texts.clone())) as ArrayRef,
            1 => Arc::new(arrow_array::BooleanArray::from(flags.clone())),
            2 => Arc::new(arrow_array::Int64Array::from(ints.clone())),
            _ => new_empty_array(field.data_type()),
        })
        .collect();
    let values = UnionArray::try_new(
        fields,
        ScalarBuffer::from(type_ids),
        Some(ScalarBuffer::from(offsets)),
        children,
    )?;
    Ok(RecordBatch::try_new(
        GET_INFO_SCHEMA.clone(),
        vec![
            Arc::new(arrow_array::UInt32Array::from(names)),
            Arc::new(values),
        ],
    )?)
}

enum InfoValue {
    Text(String),
    Flag(bool),
    Int(i64),
}

/// Appends `value`, returning its index.
fn push<T>(values: &mut Vec<T>, value: T) -> i32 {
    values.push(value);
    (values.len() - 1) as i32
}

/// `GetObjects` (module docs).
pub(crate) fn objects(
    settings: &Settings,
    depth: ObjectDepth,
    filter: &ObjectFilter<'_>,
    cancel: &Arc<AtomicBool>,
) -> Result<RecordBatch> {
    // The one catalog, and its one schema, have no name: a filter asking
    // for a named one finds nothing.
    let unnamed = |f: Option<&str>| f.is_none_or(|p| p.is_empty() || p == "%");
    let catalogs = usize::from(unnamed(filter.catalog));
    let schemas_wanted = catalogs == 1 && unnamed(filter.db_schema);
    let tables = match depth {
        ObjectDepth::All | ObjectDepth::Tables | ObjectDepth::Columns if schemas_wanted => {
            Some(plan_objects(settings, filter)?)
        }
        _ => None,
    };
    let with_columns = matches!(depth, ObjectDepth::All | ObjectDepth::Columns);
    let constraints = match &tables {
        Some(tables) if with_columns && !tables.is_empty() => constraints(settings, cancel)?,
        _ => HashMap::new(),
    };
    let db_schemas = match depth {
        ObjectDepth::Catalogs => None,
        _ => Some(db_schema_list(
            usize::from(schemas_wanted) * catalogs,
            tables.as_ref(),
            with_columns.then_some(&constraints),
            filter.column_name,
        )?),
    };
    let catalog_names: ArrayRef = Arc::new(StringArray::from(vec![None::<&str>; catalogs]));
    let catalog_schemas = match db_schemas {
        Some(list) => wrap_list(&GET_OBJECTS_SCHEMA.field(1).data_type().clone(), vec![list])?,
        None => new_null_array(GET_OBJECTS_SCHEMA.field(1).data_type(), catalogs),
    };
    let catalog_schemas = catalog_schemas.slice(0, catalogs);
    Ok(RecordBatch::try_new(
        GET_OBJECTS_SCHEMA.clone(),
        vec![catalog_names, catalog_schemas],
    )?)
}

/// A planned table or view (no row read) and its Arrow schema.
type Object = (fbunload::TablePlan, SchemaRef);

/// The tables and views the filter selects, tables first, each by name.
fn plan_objects(settings: &Settings, filter: &ObjectFilter<'_>) -> Result<Vec<Object>> {
    let wanted = |kind: &str| {
        filter
            .table_type
            .as_ref()
            .is_none_or(|types| types.iter().any(|t| t.eq_ignore_ascii_case(kind)))
    };
    let pattern = like_to_similar(filter.table_name.unwrap_or("%"));
    let mut objects = Vec::new();
    // Apart: either kind may have nothing to match, which is an error
    // for the facade and an empty list here.
    for (kind, unload) in [
        ("TABLE", settings.unload()?.tables(pattern.clone())),
        ("VIEW", settings.unload()?.views(pattern.clone())),
    ] {
        if !wanted(kind) {
            continue;
        }
        match unload.prepare() {
            Ok(prepared) => {
                for (plan, schema) in prepared.plan.tables.iter().zip(prepared.schemas.iter()) {
                    objects.push(as_select_star(settings, plan.clone(), schema.clone())?);
                }
            }
            Err(e) if is_nothing_found(&e) => {}
            Err(e) => return Err(from_run(e)),
        }
    }
    Ok(objects)
}

/// A table with computed columns has them among its columns, as
/// `SELECT *` returns them (module `read`): its columns are then the
/// server's description of that query, the stored ones with their
/// declared types, the computed ones with the type the server describes.
fn as_select_star(
    settings: &Settings,
    mut plan: fbunload::TablePlan,
    schema: SchemaRef,
) -> Result<Object> {
    if plan.computed.is_empty() {
        return Ok((plan, schema));
    }
    let sql = format!("SELECT * FROM {}", fbunload::quote_identifier(&plan.name));
    let query = settings
        .unload()?
        .query(crate::read::QUERY_NAME, sql)
        .prepare()
        .map_err(from_run)?;
    let described = &query.plan.tables[0];
    plan.declared_types = (described.columns.iter())
        .zip(&described.declared_types)
        .map(
            |(name, described)| match plan.columns.iter().position(|c| c == name) {
                Some(stored) => plan.declared_types[stored].clone(),
                None => described.clone(),
            },
        )
        .collect();
    plan.columns = described.columns.clone();
    Ok((plan, query.schemas[0].clone()))
}

/// A LIKE pattern (`%`, `_`) as the `tables` pattern that matches the
/// same names, case and all: every run of other characters double-quoted,
/// which a pattern takes exactly (ADBC names are as stored).
fn like_to_similar(pattern: &str) -> String {
    let mut similar = String::with_capacity(pattern.len() + 2);
    let mut quoted = false;
    for c in pattern.chars() {
        let wildcard = matches!(c, '%' | '_');
        if wildcard == quoted {
            similar.push('"');
            quoted = !quoted;
        }
        if c == '"' {
            similar.push('"');
        }
        similar.push(c);
    }
    if quoted {
        similar.push('"');
    }
    similar
}

/// Whether `name` matches the LIKE pattern `pattern` (`%`: any run of
/// characters, `_`: any one).
fn like(pattern: &[char], name: &[char]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some(('%', rest)) => (0..=name.len()).any(|skip| like(rest, &name[skip..])),
        Some(('_', rest)) => !name.is_empty() && like(rest, &name[1..]),
        Some((c, rest)) => name.first() == Some(c) && like(rest, &name[1..]),
    }
}

/// The list of the one db schema, for `count` (0 or 1) catalogs.
fn db_schema_list(
    count: usize,
    objects: Option<&Vec<Object>>,
    with_columns: Option<&Constraints>,
    column_name: Option<&str>,
) -> Result<ArrayRef> {
    let Some(DataType::Struct(fields)) =
        list_item(&GET_OBJECTS_SCHEMA.field(1).data_type().clone())
    else {
        unreachable!("ADBC's catalog_db_schemas is a list of structs");
    };
    let names: ArrayRef = Arc::new(StringArray::from(vec![None::<&str>; count]));
    let tables_type = fields[1].data_type().clone();
    let tables = match objects {
        Some(objects) if count == 1 => {
            let tables = table_structs(objects, with_columns, column_name)?;
            wrap_list(&tables_type, vec![tables])?
        }
        _ => new_null_array(&tables_type, count),
    };
    let tables = tables.slice(0, count);
    Ok(Arc::new(StructArray::try_new(
        fields,
        vec![names, tables],
        None,
    )?))
}

/// Every planned table and view as ADBC's TABLE_SCHEMA struct; with the
/// columns, with their constraints too (an empty list where none).
fn table_structs(
    objects: &[Object],
    with_columns: Option<&Constraints>,
    column_name: Option<&str>,
) -> Result<ArrayRef> {
    let DataType::Struct(fields) = TABLE_SCHEMA.clone() else {
        unreachable!("ADBC's TABLE_SCHEMA is a struct");
    };
    let (plans, schemas): (Vec<_>, Vec<SchemaRef>) = objects.iter().cloned().unzip();
    let names: ArrayRef = Arc::new(StringArray::from_iter_values(
        plans.iter().map(|t| t.name.clone()),
    ));
    let types: ArrayRef = Arc::new(StringArray::from_iter_values(plans.iter().map(
        |t| match t.kind {
            Kind::View => "VIEW",
            _ => "TABLE",
        },
    )));
    let columns_type = fields[2].data_type().clone();
    let columns = if with_columns.is_some() {
        let pattern: Option<Vec<char>> = column_name.map(|p| p.chars().collect());
        let per_table = plans
            .iter()
            .zip(&schemas)
            .map(|(plan, schema)| column_structs(plan, schema, pattern.as_deref()))
            .collect::<Result<Vec<_>>>()?;
        wrap_list(&columns_type, per_table)?
    } else {
        new_null_array(&columns_type, plans.len())
    };
    let constraints = match with_columns {
        Some(all) => {
            let none = Vec::new();
            let per_table = plans
                .iter()
                .map(|plan| constraint_structs(all.get(&plan.name).unwrap_or(&none)))
                .collect::<Result<Vec<_>>>()?;
            wrap_list(fields[3].data_type(), per_table)?
        }
        None => new_null_array(fields[3].data_type(), plans.len()),
    };
    Ok(Arc::new(StructArray::try_new(
        fields,
        vec![names, types, columns, constraints],
        None,
    )?))
}

/// A constraint of a table, as `GetObjects` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Constraint {
    name: String,
    /// `PRIMARY KEY`, `UNIQUE`, `FOREIGN KEY` or `CHECK`.
    kind: String,
    /// Its columns, in the key's order (none for a CHECK).
    columns: Vec<String>,
    /// A FOREIGN KEY's referenced table and column, one per column.
    references: Vec<(String, String)>,
}

/// Each table's constraints, by table name.
type Constraints = HashMap<String, Vec<Constraint>>;

/// Every constraint of every table, one row per constraint column, in key
/// order; a FOREIGN KEY's row has the column it references at the same
/// position of the referenced key. Names are CHAR(63) in the catalog:
/// trimmed (Firebird ignores trailing blanks of names).
const CONSTRAINTS_SQL: &str = "SELECT TRIM(rc.RDB$RELATION_NAME) AS TABLE_NAME, \
     TRIM(rc.RDB$CONSTRAINT_NAME) AS NAME, TRIM(rc.RDB$CONSTRAINT_TYPE) AS KIND, \
     TRIM(seg.RDB$FIELD_NAME) AS COLUMN_NAME, TRIM(uq.RDB$RELATION_NAME) AS REF_TABLE, \
     TRIM(useg.RDB$FIELD_NAME) AS REF_COLUMN \
     FROM RDB$RELATION_CONSTRAINTS rc \
     LEFT JOIN RDB$INDEX_SEGMENTS seg ON seg.RDB$INDEX_NAME = rc.RDB$INDEX_NAME \
     LEFT JOIN RDB$REF_CONSTRAINTS ref ON ref.RDB$CONSTRAINT_NAME = rc.RDB$CONSTRAINT_NAME \
     LEFT JOIN RDB$RELATION_CONSTRAINTS uq ON uq.RDB$CONSTRAINT_NAME = ref.RDB$CONST_NAME_UQ \
     LEFT JOIN RDB$INDEX_SEGMENTS useg ON useg.RDB$INDEX_NAME = uq.RDB$INDEX_NAME \
       AND useg.RDB$FIELD_POSITION = seg.RDB$FIELD_POSITION \
     WHERE rc.RDB$CONSTRAINT_TYPE IN ('PRIMARY KEY', 'UNIQUE', 'FOREIGN KEY', 'CHECK') \
     ORDER BY 1, 2, seg.RDB$FIELD_POSITION";

/// The constraints of every table, read as a query at a snapshot of its
/// own; `cancel` stops the read.
fn constraints(settings: &Settings, cancel: &Arc<AtomicBool>) -> Result<Constraints> {
    let mut batches = (settings.unload()?.query("CONSTRAINTS", CONSTRAINTS_SQL))
        .record_batches()
        .map_err(from_run)?;
    let mut all = Constraints::new();
    while let Some(item) = batches.next() {
        if cancel.load(Ordering::SeqCst) {
            batches.cancel();
        }
        let batch = item.map_err(from_run)?.batch;
        let text = |i: usize| batch.column(i).as_string::<i32>().clone();
        let (tables, names, kinds) = (text(0), text(1), text(2));
        let (columns, ref_tables, ref_columns) = (text(3), text(4), text(5));
        let value = |a: &StringArray, row| a.is_valid(row).then(|| a.value(row).to_string());
        for row in 0..batch.num_rows() {
            let list = all.entry(tables.value(row).to_string()).or_default();
            let name = names.value(row);
            if list.last().is_none_or(|c| c.name != name) {
                list.push(Constraint {
                    name: name.to_string(),
                    kind: kinds.value(row).to_string(),
                    columns: Vec::new(),
                    references: Vec::new(),
                });
            }
            let constraint = list.last_mut().expect("pushed above");
            if let Some(column) = value(&columns, row) {
                constraint.columns.push(column);
            }
            if let (Some(table), Some(column)) = (value(&ref_tables, row), value(&ref_columns, row))
            {
                constraint.references.push((table, column));
            }
        }
    }
    if cancel.load(Ordering::SeqCst) {
        return Err(crate::cancel::cancelled());
    }
    Ok(all)
}

/// One table's constraints as ADBC's CONSTRAINT_SCHEMA struct.
fn constraint_structs(constraints: &[Constraint]) -> Result<ArrayRef> {
    let DataType::Struct(fields) = CONSTRAINT_SCHEMA.clone() else {
        unreachable!("ADBC's CONSTRAINT_SCHEMA is a struct");
    };
    let DataType::Struct(usage_fields) = USAGE_SCHEMA.clone() else {
        unreachable!("ADBC's USAGE_SCHEMA is a struct");
    };
    let names: ArrayRef = Arc::new(StringArray::from_iter_values(
        constraints.iter().map(|c| c.name.clone()),
    ));
    let kinds: ArrayRef = Arc::new(StringArray::from_iter_values(
        constraints.iter().map(|c| c.kind.clone()),
    ));
    let columns = constraints
        .iter()
        .map(|c| Arc::new(StringArray::from_iter_values(c.columns.iter())) as ArrayRef)
        .collect();
    let usages = constraints
        .iter()
        .map(|c| {
            let n = c.references.len();
            let tables = c.references.iter().map(|(table, _)| table.as_str());
            let columns = c.references.iter().map(|(_, column)| column.as_str());
            let usage: Vec<ArrayRef> = vec![
                new_null_array(&DataType::Utf8, n),
                new_null_array(&DataType::Utf8, n),
                Arc::new(StringArray::from_iter_values(tables)),
                Arc::new(StringArray::from_iter_values(columns)),
            ];
            Ok(Arc::new(StructArray::try_new(usage_fields.clone(), usage, None)?) as ArrayRef)
        })
        .collect::<Result<Vec<_>>>()?;
    let arrays = vec![
        names,
        kinds,
        wrap_list(fields[2].data_type(), columns)?,
        wrap_list(fields[3].data_type(), usages)?,
    ];
    Ok(Arc::new(StructArray::try_new(fields, arrays, None)?))
}

/// One table's columns as ADBC's COLUMN_SCHEMA struct.
fn column_structs(
    plan: &fbunload::TablePlan,
    schema: &SchemaRef,
    pattern: Option<&[char]>,
) -> Result<ArrayRef> {
    let DataType::Struct(fields) = COLUMN_SCHEMA.clone() else {
        unreachable!("ADBC's COLUMN_SCHEMA is a struct");
    };
    let chosen: Vec<usize> = (0..schema.fields().len())
        .filter(|&i| {
            let name: Vec<char> = schema.field(i).name().chars().collect();
            pattern.is_none_or(|p| like(p, &name))
        })
        .collect();
    let n = chosen.len();
    let field = |i: usize| schema.field(i);
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(fields.len());
    for f in fields.iter() {
        let array: ArrayRef = match f.name().as_str() {
            "column_name" => Arc::new(StringArray::from_iter_values(
                chosen.iter().map(|&i| field(i).name().clone()),
            )),
            "ordinal_position" => Arc::new(Int32Array::from_iter_values(
                chosen.iter().map(|&i| i as i32 + 1),
            )),
            "xdbc_type_name" => Arc::new(StringArray::from_iter(
                chosen.iter().map(|&i| plan.declared_types.get(i).cloned()),
            )),
            "xdbc_nullable" => Arc::new(Int16Array::from_iter_values(
                chosen.iter().map(|&i| i16::from(field(i).is_nullable())),
            )),
            "xdbc_is_nullable" => {
                Arc::new(StringArray::from_iter_values(chosen.iter().map(|&i| {
                    if field(i).is_nullable() {
                        "YES"
                    } else {
                        "NO"
                    }
                })))
            }
            _ => new_null_array(f.data_type(), n),
        };
        arrays.push(array);
    }
    Ok(Arc::new(StructArray::try_new(fields, arrays, None)?))
}

/// The item type of a list type.
fn list_item(list: &DataType) -> Option<DataType> {
    match list {
        DataType::List(item) => Some(item.data_type().clone()),
        _ => None,
    }
}

/// A list array of type `list_type` with one list per part, each holding
/// that part's rows.
fn wrap_list(list_type: &DataType, parts: Vec<ArrayRef>) -> Result<ArrayRef> {
    let DataType::List(item) = list_type else {
        return Err(Error::with_message_and_status(
            "not a list type",
            Status::Internal,
        ));
    };
    let lengths: Vec<usize> = parts.iter().map(|p| p.len()).collect();
    let values = if parts.is_empty() {
        new_empty_array(item.data_type())
    } else {
        let refs: Vec<&dyn Array> = parts.iter().map(|p| p.as_ref()).collect();
        arrow_select::concat::concat(&refs)?
    };
    Ok(Arc::new(ListArray::try_new(
        item.clone(),
        OffsetBuffer::from_lengths(lengths),
        values,
        None,
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_patterns_keep_their_case_and_wildcards() {
        assert_eq!(like_to_similar("%"), "%");
        assert_eq!(like_to_similar("st%"), "\"st\"%");
        assert_eq!(like_to_similar("a_b\"c|,"), "\"a\"_\"b\"\"c|,\"");
    }

    #[test]
    fn like_patterns() {
        let m = |p: &str, n: &str| {
            like(
                &p.chars().collect::<Vec<_>>(),
                &n.chars().collect::<Vec<_>>(),
            )
        };
        assert!(m("%", "STOCK"));
        assert!(m("S_OCK", "STOCK"));
        assert!(m("ST%", "STOCK"));
        assert!(!m("ST", "STOCK"));
        assert!(!m("%X%", "STOCK"));
    }

    #[test]
    fn table_types_are_tables_and_views() {
        let batch = table_types().unwrap();
        assert_eq!(batch.num_rows(), 2);
    }

    #[test]
    fn info_is_in_adbcs_layout() {
        let batch = info(None).unwrap();
        assert_eq!(batch.schema(), GET_INFO_SCHEMA.clone());
        assert_eq!(batch.num_rows(), 6);
        let only = info(Some([InfoCode::DriverName].into())).unwrap();
        assert_eq!(only.num_rows(), 1);
    }
}
