//! The column kinds of `table!`: for each, its Arrow field, how a table's rows become its array
//! and how its array becomes rows again (errors through `column`, `no_nulls`, `strings` and
//! `primitives`, so every table reports them alike).

use std::sync::Arc;

use arrow_array::builder::{
    Float32Builder, ListBuilder, StringBuilder, UInt32Builder, UInt64Builder,
};
use arrow_array::types::{Float32Type, Float64Type, UInt32Type, UInt64Type};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Date32Array, Float64Array, ListArray, RecordBatch, StringArray,
    TimestampMillisecondArray, UInt32Array,
};
use arrow_schema::{DataType, Field, TimeUnit};

use super::table::{column, no_nulls, primitives, string_array, strings, u32_array, TableError};

/// Declares a table once: its row struct (attributes and doc comments kept) and its [`Table`]
/// impl, from one list of columns `field: Type => Kind` in schema order, `Kind` one of the column
/// kinds of `columns.rs`. The column is named after the field; the kind gives its Arrow type,
/// nullability, how rows become an array and how an array becomes rows (`Type` must be the
/// kind's value type).
macro_rules! table {
    (
        $(#[$meta:meta])*
        pub struct $row:ident in $name:literal {
            $(
                $(#[$field_meta:meta])*
                pub $field:ident: $ty:ty => $kind:ident,
            )*
        }
    ) => {
        $(#[$meta])*
        pub struct $row {
            $(
                $(#[$field_meta])*
                pub $field: $ty,
            )*
        }

        impl $crate::tables::table::Table for $row {
            const NAME: &'static str = $name;

            fn schema() -> arrow_schema::SchemaRef {
                std::sync::Arc::new(arrow_schema::Schema::new(vec![$(
                    <$crate::tables::columns::$kind as $crate::tables::columns::Kind>::field(
                        stringify!($field),
                    ),
                )*]))
            }

            fn to_batch(rows: &[Self]) -> arrow_array::RecordBatch {
                $crate::tables::table::batch(
                    <Self as $crate::tables::table::Table>::schema(),
                    vec![$(
                        <$crate::tables::columns::$kind as $crate::tables::columns::Kind>::array(
                            rows.iter().map(|r| &r.$field),
                        ),
                    )*],
                )
            }

            fn from_batch(
                batch: &arrow_array::RecordBatch,
            ) -> Result<Vec<Self>, $crate::tables::table::TableError> {
                let table = <Self as $crate::tables::table::Table>::NAME;
                $(
                    let mut $field =
                        <$crate::tables::columns::$kind as $crate::tables::columns::Kind>::read(
                            table,
                            batch,
                            stringify!($field),
                        )?
                        .into_iter();
                )*
                Ok((0..batch.num_rows())
                    .map(|_| $row {
                        $($field: $field.next().expect("one value per row"),)*
                    })
                    .collect())
            }
        }
    };
}

/// A kind of column: the Rust value of one row and the Arrow column it is kept in.
pub(super) trait Kind {
    /// One row's value.
    type Value: 'static;
    /// The column's field.
    fn field(name: &str) -> Field;
    /// The column of these values, one per row.
    fn array<'a>(values: impl Iterator<Item = &'a Self::Value>) -> ArrayRef;
    /// The values of column `name` of a batch of `table`.
    fn read(
        table: &'static str,
        batch: &RecordBatch,
        name: &str,
    ) -> Result<Vec<Self::Value>, TableError>;
}

/// `utf8`, not null: `String`.
pub(super) struct Utf8;

impl Kind for Utf8 {
    type Value = String;

    fn field(name: &str) -> Field {
        Field::new(name, DataType::Utf8, false)
    }

    fn array<'a>(values: impl Iterator<Item = &'a String>) -> ArrayRef {
        string_array(values.map(String::as_str))
    }

    fn read(t: &'static str, b: &RecordBatch, name: &str) -> Result<Vec<String>, TableError> {
        strings(t, b, name)
    }
}

/// `utf8`, nullable: `Option<String>`.
pub(super) struct Utf8Opt;

impl Kind for Utf8Opt {
    type Value = Option<String>;

    fn field(name: &str) -> Field {
        Field::new(name, DataType::Utf8, true)
    }

    fn array<'a>(values: impl Iterator<Item = &'a Option<String>>) -> ArrayRef {
        Arc::new(StringArray::from_iter(values.map(Option::as_deref)))
    }

    fn read(
        t: &'static str,
        b: &RecordBatch,
        name: &str,
    ) -> Result<Vec<Option<String>>, TableError> {
        let a = column::<StringArray>(t, b, name)?;
        Ok(a.iter().map(|v| v.map(str::to_string)).collect())
    }
}

/// `uint32`, not null: `u32`.
pub(super) struct U32;

impl Kind for U32 {
    type Value = u32;

    fn field(name: &str) -> Field {
        Field::new(name, DataType::UInt32, false)
    }

    fn array<'a>(values: impl Iterator<Item = &'a u32>) -> ArrayRef {
        u32_array(values.copied())
    }

    fn read(t: &'static str, b: &RecordBatch, name: &str) -> Result<Vec<u32>, TableError> {
        primitives::<UInt32Type>(t, b, name)
    }
}

/// `uint32`, nullable: `Option<u32>`.
pub(super) struct U32Opt;

impl Kind for U32Opt {
    type Value = Option<u32>;

    fn field(name: &str) -> Field {
        Field::new(name, DataType::UInt32, true)
    }

    fn array<'a>(values: impl Iterator<Item = &'a Option<u32>>) -> ArrayRef {
        Arc::new(UInt32Array::from_iter(values.copied()))
    }

    fn read(t: &'static str, b: &RecordBatch, name: &str) -> Result<Vec<Option<u32>>, TableError> {
        Ok(column::<UInt32Array>(t, b, name)?.iter().collect())
    }
}

/// `float64`, not null: `f64`.
pub(super) struct F64;

impl Kind for F64 {
    type Value = f64;

    fn field(name: &str) -> Field {
        Field::new(name, DataType::Float64, false)
    }

    fn array<'a>(values: impl Iterator<Item = &'a f64>) -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(values.copied()))
    }

    fn read(t: &'static str, b: &RecordBatch, name: &str) -> Result<Vec<f64>, TableError> {
        primitives::<Float64Type>(t, b, name)
    }
}

/// `boolean`, not null: `bool`.
pub(super) struct Bool;

impl Kind for Bool {
    type Value = bool;

    fn field(name: &str) -> Field {
        Field::new(name, DataType::Boolean, false)
    }

    fn array<'a>(values: impl Iterator<Item = &'a bool>) -> ArrayRef {
        Arc::new(BooleanArray::from_iter(values.map(|&v| Some(v))))
    }

    fn read(t: &'static str, b: &RecordBatch, name: &str) -> Result<Vec<bool>, TableError> {
        let a = column::<BooleanArray>(t, b, name)?;
        no_nulls(t, name, a)?;
        Ok((0..a.len()).map(|i| a.value(i)).collect())
    }
}

/// `date32` (days since 1970-01-01), nullable: `Option<i32>`.
pub(super) struct Date32Opt;

impl Kind for Date32Opt {
    type Value = Option<i32>;

    fn field(name: &str) -> Field {
        Field::new(name, DataType::Date32, true)
    }

    fn array<'a>(values: impl Iterator<Item = &'a Option<i32>>) -> ArrayRef {
        Arc::new(Date32Array::from_iter(values.copied()))
    }

    fn read(t: &'static str, b: &RecordBatch, name: &str) -> Result<Vec<Option<i32>>, TableError> {
        Ok(column::<Date32Array>(t, b, name)?.iter().collect())
    }
}

/// `list<utf8>`, not null (nor its items): `Vec<String>`.
pub(super) struct StringList;

impl Kind for StringList {
    type Value = Vec<String>;

    fn field(name: &str) -> Field {
        Field::new(
            name,
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            false,
        )
    }

    fn array<'a>(lists: impl Iterator<Item = &'a Vec<String>>) -> ArrayRef {
        let mut builder = ListBuilder::new(StringBuilder::new());
        for list in lists {
            for item in list {
                builder.values().append_value(item);
            }
            builder.append(true);
        }
        Arc::new(builder.finish())
    }

    fn read(t: &'static str, b: &RecordBatch, name: &str) -> Result<Vec<Vec<String>>, TableError> {
        let lists = column::<ListArray>(t, b, name)?;
        no_nulls(t, name, lists)?;
        let err = |reason: &str| TableError {
            table: t,
            column: name.into(),
            reason: reason.into(),
        };
        (0..lists.len())
            .map(|i| {
                let list = lists.value(i);
                let items = list
                    .as_any()
                    .downcast_ref::<StringArray>()
                    .ok_or_else(|| err("items are not utf8"))?;
                items
                    .iter()
                    .map(|s| s.map(str::to_string).ok_or_else(|| err("null item")))
                    .collect()
            })
            .collect()
    }
}

/// `timestamp[ms, UTC]`, not null: `i64` milliseconds since 1970-01-01T00:00:00Z.
pub(super) struct TimestampMs;

/// The Arrow type of [`TimestampMs`] and [`TimestampMsOpt`].
fn timestamp_ms() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
}

impl Kind for TimestampMs {
    type Value = i64;

    fn field(name: &str) -> Field {
        Field::new(name, timestamp_ms(), false)
    }

    fn array<'a>(values: impl Iterator<Item = &'a i64>) -> ArrayRef {
        Arc::new(TimestampMillisecondArray::from_iter_values(values.copied()).with_timezone("UTC"))
    }

    fn read(t: &'static str, b: &RecordBatch, name: &str) -> Result<Vec<i64>, TableError> {
        let a = column::<TimestampMillisecondArray>(t, b, name)?;
        no_nulls(t, name, a)?;
        Ok(a.values().to_vec())
    }
}

/// `timestamp[ms, UTC]`, nullable: `Option<i64>`.
pub(super) struct TimestampMsOpt;

impl Kind for TimestampMsOpt {
    type Value = Option<i64>;

    fn field(name: &str) -> Field {
        Field::new(name, timestamp_ms(), true)
    }

    fn array<'a>(values: impl Iterator<Item = &'a Option<i64>>) -> ArrayRef {
        Arc::new(TimestampMillisecondArray::from_iter(values.copied()).with_timezone("UTC"))
    }

    fn read(t: &'static str, b: &RecordBatch, name: &str) -> Result<Vec<Option<i64>>, TableError> {
        Ok(column::<TimestampMillisecondArray>(t, b, name)?
            .iter()
            .collect())
    }
}

/// The items of every row of a list column of primitives (no null list, no null item).
fn primitive_lists<T: arrow_array::ArrowPrimitiveType>(
    t: &'static str,
    b: &RecordBatch,
    name: &str,
) -> Result<Vec<Vec<T::Native>>, TableError> {
    let lists = column::<ListArray>(t, b, name)?;
    no_nulls(t, name, lists)?;
    let err = |reason: &str| TableError {
        table: t,
        column: name.into(),
        reason: reason.into(),
    };
    (0..lists.len())
        .map(|i| {
            let list = lists.value(i);
            let items = list
                .as_any()
                .downcast_ref::<arrow_array::PrimitiveArray<T>>()
                .ok_or_else(|| err("items of the wrong type"))?;
            if items.null_count() > 0 {
                return Err(err("null item"));
            }
            Ok(items.values().to_vec())
        })
        .collect()
}

macro_rules! primitive_list_kind {
    ($(#[$doc:meta])* $kind:ident, $native:ty, $arrow:ty, $builder:ty, $data_type:expr) => {
        $(#[$doc])*
        pub(super) struct $kind;

        impl Kind for $kind {
            type Value = Vec<$native>;

            fn field(name: &str) -> Field {
                Field::new(
                    name,
                    DataType::List(Arc::new(Field::new("item", $data_type, true))),
                    false,
                )
            }

            fn array<'a>(lists: impl Iterator<Item = &'a Vec<$native>>) -> ArrayRef {
                let mut builder = ListBuilder::new(<$builder>::new());
                for list in lists {
                    builder.values().append_slice(list);
                    builder.append(true);
                }
                Arc::new(builder.finish())
            }

            fn read(
                t: &'static str,
                b: &RecordBatch,
                name: &str,
            ) -> Result<Vec<Vec<$native>>, TableError> {
                primitive_lists::<$arrow>(t, b, name)
            }
        }
    };
}

primitive_list_kind!(
    /// `list<uint32>`, not null (nor its items): `Vec<u32>`.
    U32List,
    u32,
    UInt32Type,
    UInt32Builder,
    DataType::UInt32
);
primitive_list_kind!(
    /// `list<uint64>`, not null (nor its items): `Vec<u64>`.
    U64List,
    u64,
    UInt64Type,
    UInt64Builder,
    DataType::UInt64
);
primitive_list_kind!(
    /// `list<float32>`, not null (nor its items): `Vec<f32>`.
    F32List,
    f32,
    Float32Type,
    Float32Builder,
    DataType::Float32
);
