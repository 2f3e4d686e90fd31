//! The tables epimine reads and writes: one Arrow schema each, defined once here, with typed
//! rows and their conversion to and from record batches.
//!
//! Every table that names a segment does so by the triple (`key_event`, `doc_id`, `seg_idx`):
//! `doc_id` is the 0-based index of the article in file order, `seg_idx` the 0-based index of the
//! segment inside its article. A JSON copy of every schema lives in `schemas/` (see
//! [`all_schemas`]); a test fails when the two differ.
//!
//! A table is declared once, by the `table!` macro (`columns.rs`): its row struct with one
//! column kind per field, from which its schema, `to_batch` and `from_batch` follow (the
//! [`Table`] trait and the column helpers are in `table.rs`). The vector tables
//! (`sentence_embeddings`, `word_vectors`), whose width is the encoder's, are written and read
//! by the functions below instead.

use std::sync::Arc;

use arrow_array::types::UInt32Type;
use arrow_array::{Array, ArrayRef, FixedSizeListArray, Float32Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

mod table;
#[macro_use]
mod columns;
mod episodes;
mod inputs;
mod lineage;
mod mining;

pub use episodes::{
    assignments_schema, episode_articles_schema, episodes_schema, left_out_schema, Assignment,
    Episode, EpisodeArticle, EpisodeSpan, LeftOut,
};
pub use inputs::{
    gold_episodes_schema, labels_schema, segments_schema, ArticleParagraphs, Boilerplate,
    CopyArticle, GoldEpisode, Label, Rejected, Segment,
};
pub use lineage::{lineage_schema, Development, EpisodeKeys, EpisodeState, EventArticles, Lineage};
pub use mining::{fragments_schema, pairs_schema, terms_schema, FragmentRow, Pair, Term};
use table::{batch, column, no_nulls, primitives, string_array, strings, u32_array};
pub use table::{Table, TableError};

fn u32_field(name: &str) -> Field {
    Field::new(name, DataType::UInt32, false)
}

fn utf8_field(name: &str) -> Field {
    Field::new(name, DataType::Utf8, false)
}

/// Name of the sentence embedding table (`epimine encode`).
pub const SENTENCE_EMBEDDINGS: &str = "sentence_embeddings";
/// Name of the static word vector table (`epimine encode --words`).
pub const WORD_VECTORS: &str = "word_vectors";
/// Width of the vector columns in `schemas/`: the default encoder's (all-MiniLM-L6-v2). A file
/// written by another model has that model's hidden size.
pub const DEFAULT_VECTOR_DIM: usize = 384;

fn vector_field(name: &str, dim: usize) -> Field {
    Field::new(
        name,
        DataType::FixedSizeList(
            Arc::new(Field::new("item", DataType::Float32, false)),
            dim as i32,
        ),
        false,
    )
}

/// `sentence_embeddings`: one embedding per input text; `idx` is the text's 0-based line.
pub fn sentence_embeddings_schema(dim: usize) -> SchemaRef {
    Arc::new(Schema::new(vec![
        u32_field("idx"),
        vector_field("embedding", dim),
    ]))
}

/// `word_vectors`: the static representation of every word of a key event (docs/method.md §1),
/// with its number of occurrences.
pub fn word_vectors_schema(dim: usize) -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8_field("word"),
        u32_field("count"),
        vector_field("vector", dim),
    ]))
}

fn vector_array(dim: usize, values: Vec<f32>) -> ArrayRef {
    let values = Float32Array::from(values);
    Arc::new(FixedSizeListArray::new(
        Arc::new(Field::new("item", DataType::Float32, false)),
        dim as i32,
        Arc::new(values),
        None,
    ))
}

/// The `sentence_embeddings` rows of `data` (`idx.len() × dim` values, row-major).
pub fn sentence_embeddings_batch(dim: usize, idx: &[u32], data: Vec<f32>) -> RecordBatch {
    assert_eq!(idx.len() * dim, data.len(), "one vector per index");
    batch(
        sentence_embeddings_schema(dim),
        vec![u32_array(idx.iter().copied()), vector_array(dim, data)],
    )
}

/// The `word_vectors` rows (each vector `dim` wide).
pub fn word_vectors_batch(dim: usize, words: &[(String, u32, Vec<f32>)]) -> RecordBatch {
    let mut values = Vec::with_capacity(words.len() * dim);
    for (_, _, v) in words {
        assert_eq!(v.len(), dim, "vector width");
        values.extend_from_slice(v);
    }
    batch(
        word_vectors_schema(dim),
        vec![
            string_array(words.iter().map(|w| w.0.as_str())),
            u32_array(words.iter().map(|w| w.1)),
            vector_array(dim, values),
        ],
    )
}

/// The vectors of a fixed-size list column: its width and row-major values.
pub fn vector_column(
    table: &'static str,
    batch: &RecordBatch,
    name: &str,
) -> Result<(usize, Vec<f32>), TableError> {
    let list = column::<FixedSizeListArray>(table, batch, name)?;
    no_nulls(table, name, list)?;
    let values = list
        .values()
        .as_any()
        .downcast_ref::<Float32Array>()
        .ok_or_else(|| TableError {
            table,
            column: name.to_string(),
            reason: "items are not float32".into(),
        })?;
    let dim = list.value_length() as usize;
    let start = list.offset() * dim;
    Ok((
        dim,
        values.values()[start..start + list.len() * dim].to_vec(),
    ))
}

/// The `u32` values of a column.
pub fn u32_column(
    table: &'static str,
    batch: &RecordBatch,
    name: &str,
) -> Result<Vec<u32>, TableError> {
    primitives::<UInt32Type>(table, batch, name)
}

/// The `utf8` values of a column.
pub fn utf8_column(
    table: &'static str,
    batch: &RecordBatch,
    name: &str,
) -> Result<Vec<String>, TableError> {
    strings(table, batch, name)
}

/// Every table's name and schema, in the order of `schemas/`.
pub fn all_schemas() -> Vec<(&'static str, SchemaRef)> {
    vec![
        (Segment::NAME, Segment::schema()),
        (Label::NAME, Label::schema()),
        (GoldEpisode::NAME, GoldEpisode::schema()),
        (Episode::NAME, Episode::schema()),
        (Assignment::NAME, Assignment::schema()),
        (EpisodeArticle::NAME, EpisodeArticle::schema()),
        (LeftOut::NAME, LeftOut::schema()),
        (Term::NAME, Term::schema()),
        (Pair::NAME, Pair::schema()),
        (FragmentRow::NAME, FragmentRow::schema()),
        (Rejected::NAME, Rejected::schema()),
        (Boilerplate::NAME, Boilerplate::schema()),
        (ArticleParagraphs::NAME, ArticleParagraphs::schema()),
        (CopyArticle::NAME, CopyArticle::schema()),
        (Lineage::NAME, Lineage::schema()),
        (Development::NAME, Development::schema()),
        (EpisodeKeys::NAME, EpisodeKeys::schema()),
        (EpisodeState::NAME, EpisodeState::schema()),
        (EventArticles::NAME, EventArticles::schema()),
        (
            SENTENCE_EMBEDDINGS,
            sentence_embeddings_schema(DEFAULT_VECTOR_DIM),
        ),
        (WORD_VECTORS, word_vectors_schema(DEFAULT_VECTOR_DIM)),
    ]
}

/// The JSON text of a schema as kept in `schemas/<name>.json`.
pub fn schema_json(schema: &Schema) -> String {
    let mut text = serde_json::to_string_pretty(schema).expect("schemas serialize");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::StringArray;

    fn round_trip<T: Table + PartialEq + std::fmt::Debug>(rows: Vec<T>) {
        let batch = T::to_batch(&rows);
        assert_eq!(batch.schema(), T::schema());
        assert_eq!(T::from_batch(&batch).unwrap(), rows);
        assert_eq!(T::from_batch(&batch.slice(1, 1)).unwrap()[..], rows[1..2]);
    }

    #[test]
    fn declared_tables_round_trip() {
        let segment = |doc_id, theme: Option<&str>, doc_date| Segment {
            key_event: "ke".into(),
            theme: theme.map(Into::into),
            doc_id,
            doc_date,
            seg_idx: 2,
            text: "text".into(),
            source_id: None,
            title: Some("t".into()),
        };
        round_trip(vec![
            segment(0, Some("th"), Some(19000)),
            segment(1, None, None),
        ]);
        let episode = |keywords: Vec<&str>, first_date| Episode {
            key_event: "ke".into(),
            trial: 1,
            episode_id: 3,
            stable_id: None,
            status: None,
            title: "t".into(),
            title_fields: vec![],
            keywords: keywords.into_iter().map(Into::into).collect(),
            example_sentences: vec!["s".into()],
            n_segments: 4,
            source: "clusters".into(),
            n_articles: 2,
            first_date,
            peak_date: None,
            last_date: first_date,
            phase_id: 3,
            phase_stable_id: None,
        };
        round_trip(vec![
            episode(vec!["a", "b"], Some(1)),
            episode(vec![], None),
        ]);
        let term = |salient, group| Term {
            key_event: "ke".into(),
            term: "w".into(),
            freq: 1,
            bg_freq: 2,
            salience: -1.0,
            salient,
            expanded_from: None,
            group,
        };
        round_trip(vec![term(true, Some(0)), term(false, None)]);
    }

    #[test]
    fn read_errors_name_the_column() {
        let rows = [Pair {
            key_event: "ke".into(),
            a: "a".into(),
            b: "b".into(),
            freq: 1,
            d: 0.5,
        }];
        let batch = Pair::to_batch(&rows);
        let err = |b: &RecordBatch| Pair::from_batch(b).unwrap_err().to_string();
        let missing = batch.project(&[0, 1, 3, 4]).unwrap();
        assert_eq!(err(&missing), "table `pairs`, column `b`: missing");
        let wrong = RecordBatch::try_new(
            Arc::new(Schema::new(vec![utf8_field("key_event"), u32_field("a")])),
            vec![batch.column(0).clone(), u32_array([7].into_iter())],
        )
        .unwrap();
        assert_eq!(err(&wrong), "table `pairs`, column `a`: wrong type");
        let nulls = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new(
                "key_event",
                DataType::Utf8,
                true,
            )])),
            vec![Arc::new(StringArray::from(vec![Some("ke"), None])) as ArrayRef],
        )
        .unwrap();
        assert_eq!(
            err(&nulls),
            "table `pairs`, column `key_event`: null in a non-nullable column at row 1"
        );
    }
}
