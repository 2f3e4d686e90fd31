//! The tables epimine reads and writes: one Arrow schema each, defined once here, with typed
//! rows and their conversion to and from record batches.
//!
//! Every table that names a segment does so by the triple (`key_event`, `doc_id`, `seg_idx`):
//! `doc_id` is the 0-based index of the article in file order, `seg_idx` the 0-based index of the
//! segment inside its article. A JSON copy of every schema lives in `schemas/` (see
//! [`all_schemas`]); a test fails when the two differ.

use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::types::{Date32Type, Float64Type, UInt32Type};
use arrow_array::ArrowPrimitiveType;
use arrow_array::{
    Array, ArrayRef, BooleanArray, Date32Array, FixedSizeListArray, Float32Array, Float64Array,
    ListArray, PrimitiveArray, RecordBatch, StringArray, UInt32Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

/// A column could not be read as the type its schema promises.
#[derive(Debug, thiserror::Error)]
#[error("table `{table}`, column `{column}`: {reason}")]
pub struct TableError {
    /// The table's name.
    pub table: &'static str,
    /// The column.
    pub column: String,
    /// What was wrong.
    pub reason: String,
}

/// A table with a fixed Arrow schema and a typed row.
pub trait Table: Sized {
    /// The table's name; its file is `<name>.parquet`.
    const NAME: &'static str;
    /// The table's schema.
    fn schema() -> SchemaRef;
    /// The rows as one record batch.
    fn to_batch(rows: &[Self]) -> RecordBatch;
    /// The rows of one record batch (whose schema has been checked).
    fn from_batch(batch: &RecordBatch) -> Result<Vec<Self>, TableError>;

    /// The table's file name.
    fn file_name() -> String {
        format!("{}.parquet", Self::NAME)
    }

    /// Rows of many batches, in order.
    fn from_batches(batches: &[RecordBatch]) -> Result<Vec<Self>, TableError> {
        let mut rows = Vec::new();
        for batch in batches {
            rows.extend(Self::from_batch(batch)?);
        }
        Ok(rows)
    }
}

fn key_event_field() -> Field {
    Field::new("key_event", DataType::Utf8, false)
}

fn u32_field(name: &str) -> Field {
    Field::new(name, DataType::UInt32, false)
}

fn utf8_field(name: &str) -> Field {
    Field::new(name, DataType::Utf8, false)
}

/// `segments`: the input corpus, ordered by (key_event, doc_id, seg_idx).
pub fn segments_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key_event_field(),
        Field::new("theme", DataType::Utf8, true),
        u32_field("doc_id"),
        Field::new("doc_date", DataType::Date32, true),
        u32_field("seg_idx"),
        utf8_field("text"),
        Field::new("source_id", DataType::Utf8, true),
        Field::new("title", DataType::Utf8, true),
    ]))
}

/// `labels`: the gold label of a segment: an episode id as text, `M` (several episodes or
/// general) or `X` (no episode).
pub fn labels_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key_event_field(),
        u32_field("doc_id"),
        u32_field("seg_idx"),
        utf8_field("label"),
    ]))
}

/// `gold_episodes`: the described gold episodes of each key event.
pub fn gold_episodes_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key_event_field(),
        u32_field("episode_id"),
        utf8_field("description"),
    ]))
}

/// `episodes`: the detected episodes of each key event.
pub fn episodes_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key_event_field(),
        u32_field("trial"),
        u32_field("episode_id"),
        utf8_field("title"),
        string_list_field("title_fields"),
        string_list_field("keywords"),
        string_list_field("example_sentences"),
        u32_field("n_segments"),
        utf8_field("source"),
        u32_field("n_articles"),
        Field::new("first_date", DataType::Date32, true),
        Field::new("peak_date", DataType::Date32, true),
        Field::new("last_date", DataType::Date32, true),
    ]))
}

fn string_list_field(name: &str) -> Field {
    Field::new(
        name,
        DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
        false,
    )
}

/// `assignments`: segments assigned to detected episodes; `rank` 0 is the episode's top
/// segment in the run's `episodes.rank` order (density by default).
pub fn assignments_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key_event_field(),
        u32_field("trial"),
        u32_field("episode_id"),
        u32_field("doc_id"),
        u32_field("seg_idx"),
        u32_field("rank"),
        Field::new("confidence", DataType::Float64, false),
    ]))
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

/// `word_vectors`: the static representation of every word of a key event (ALGORITHM.md §1),
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
        (Term::NAME, Term::schema()),
        (Pair::NAME, Pair::schema()),
        (FragmentRow::NAME, FragmentRow::schema()),
        (Rejected::NAME, Rejected::schema()),
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

fn column<'a, A: Array + 'static>(
    table: &'static str,
    batch: &'a RecordBatch,
    name: &str,
) -> Result<&'a A, TableError> {
    let err = |reason: &str| TableError {
        table,
        column: name.to_string(),
        reason: reason.to_string(),
    };
    batch
        .column_by_name(name)
        .ok_or_else(|| err("missing"))?
        .as_any()
        .downcast_ref::<A>()
        .ok_or_else(|| err("wrong type"))
}

fn no_nulls(table: &'static str, name: &str, array: &dyn Array) -> Result<(), TableError> {
    if array.null_count() > 0 {
        let row = (0..array.len()).find(|&i| array.is_null(i)).unwrap_or(0);
        return Err(TableError {
            table,
            column: name.to_string(),
            reason: format!("null in a non-nullable column at row {row}"),
        });
    }
    Ok(())
}

fn strings(
    table: &'static str,
    batch: &RecordBatch,
    name: &str,
) -> Result<Vec<String>, TableError> {
    let a = column::<StringArray>(table, batch, name)?;
    no_nulls(table, name, a)?;
    Ok(a.iter()
        .map(|v| v.unwrap_or_default().to_string())
        .collect())
}

fn primitives<T: ArrowPrimitiveType>(
    table: &'static str,
    batch: &RecordBatch,
    name: &str,
) -> Result<Vec<T::Native>, TableError> {
    let a = column::<PrimitiveArray<T>>(table, batch, name)?;
    no_nulls(table, name, a)?;
    Ok(a.values().to_vec())
}

fn string_array<'a>(values: impl Iterator<Item = &'a str>) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(values))
}

fn u32_array(values: impl Iterator<Item = u32>) -> ArrayRef {
    Arc::new(UInt32Array::from_iter_values(values))
}

fn batch(schema: SchemaRef, columns: Vec<ArrayRef>) -> RecordBatch {
    RecordBatch::try_new(schema, columns).expect("columns match their schema")
}

/// One row of `segments`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Segment {
    /// The key event (its folder name).
    pub key_event: String,
    /// The theme (the folder above the event), if any.
    pub theme: Option<String>,
    /// 0-based article index in file order.
    pub doc_id: u32,
    /// Publication date of the article, days since 1970-01-01.
    pub doc_date: Option<i32>,
    /// 0-based segment index inside the article.
    pub seg_idx: u32,
    /// The segment's text.
    pub text: String,
    /// The article's id in its source (`epimine import --articles`), if given.
    pub source_id: Option<String>,
    /// The article's title, if given.
    pub title: Option<String>,
}

impl Table for Segment {
    const NAME: &'static str = "segments";

    fn schema() -> SchemaRef {
        segments_schema()
    }

    fn to_batch(rows: &[Self]) -> RecordBatch {
        batch(
            Self::schema(),
            vec![
                string_array(rows.iter().map(|r| r.key_event.as_str())),
                Arc::new(StringArray::from_iter(
                    rows.iter().map(|r| r.theme.as_deref()),
                )),
                u32_array(rows.iter().map(|r| r.doc_id)),
                Arc::new(Date32Array::from_iter(rows.iter().map(|r| r.doc_date))),
                u32_array(rows.iter().map(|r| r.seg_idx)),
                string_array(rows.iter().map(|r| r.text.as_str())),
                Arc::new(StringArray::from_iter(
                    rows.iter().map(|r| r.source_id.as_deref()),
                )),
                Arc::new(StringArray::from_iter(
                    rows.iter().map(|r| r.title.as_deref()),
                )),
            ],
        )
    }

    fn from_batch(b: &RecordBatch) -> Result<Vec<Self>, TableError> {
        let t = Self::NAME;
        let key_event = strings(t, b, "key_event")?;
        let theme = column::<StringArray>(t, b, "theme")?;
        let source_id = column::<StringArray>(t, b, "source_id")?;
        let title = column::<StringArray>(t, b, "title")?;
        let doc_id = primitives::<UInt32Type>(t, b, "doc_id")?;
        let doc_date = column::<PrimitiveArray<Date32Type>>(t, b, "doc_date")?;
        let seg_idx = primitives::<UInt32Type>(t, b, "seg_idx")?;
        let text = strings(t, b, "text")?;
        Ok(key_event
            .into_iter()
            .zip(text)
            .enumerate()
            .map(|(i, (key_event, text))| Segment {
                key_event,
                theme: theme.is_valid(i).then(|| theme.value(i).to_string()),
                doc_id: doc_id[i],
                doc_date: doc_date.is_valid(i).then(|| doc_date.value(i)),
                seg_idx: seg_idx[i],
                text,
                source_id: source_id
                    .is_valid(i)
                    .then(|| source_id.value(i).to_string()),
                title: title.is_valid(i).then(|| title.value(i).to_string()),
            })
            .collect())
    }
}

/// One row of `labels`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    /// The key event.
    pub key_event: String,
    /// Article index.
    pub doc_id: u32,
    /// Segment index inside the article.
    pub seg_idx: u32,
    /// Episode id as text, `M` or `X` (as the annotation file has it).
    pub label: String,
}

impl Table for Label {
    const NAME: &'static str = "labels";

    fn schema() -> SchemaRef {
        labels_schema()
    }

    fn to_batch(rows: &[Self]) -> RecordBatch {
        batch(
            Self::schema(),
            vec![
                string_array(rows.iter().map(|r| r.key_event.as_str())),
                u32_array(rows.iter().map(|r| r.doc_id)),
                u32_array(rows.iter().map(|r| r.seg_idx)),
                string_array(rows.iter().map(|r| r.label.as_str())),
            ],
        )
    }

    fn from_batch(b: &RecordBatch) -> Result<Vec<Self>, TableError> {
        let t = Self::NAME;
        let key_event = strings(t, b, "key_event")?;
        let doc_id = primitives::<UInt32Type>(t, b, "doc_id")?;
        let seg_idx = primitives::<UInt32Type>(t, b, "seg_idx")?;
        let label = strings(t, b, "label")?;
        Ok(key_event
            .into_iter()
            .zip(label)
            .enumerate()
            .map(|(i, (key_event, label))| Label {
                key_event,
                doc_id: doc_id[i],
                seg_idx: seg_idx[i],
                label,
            })
            .collect())
    }
}

/// One row of `gold_episodes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoldEpisode {
    /// The key event.
    pub key_event: String,
    /// The episode id labels refer to.
    pub episode_id: u32,
    /// `subject | action | object | time | location`.
    pub description: String,
}

impl Table for GoldEpisode {
    const NAME: &'static str = "gold_episodes";

    fn schema() -> SchemaRef {
        gold_episodes_schema()
    }

    fn to_batch(rows: &[Self]) -> RecordBatch {
        batch(
            Self::schema(),
            vec![
                string_array(rows.iter().map(|r| r.key_event.as_str())),
                u32_array(rows.iter().map(|r| r.episode_id)),
                string_array(rows.iter().map(|r| r.description.as_str())),
            ],
        )
    }

    fn from_batch(b: &RecordBatch) -> Result<Vec<Self>, TableError> {
        let t = Self::NAME;
        let key_event = strings(t, b, "key_event")?;
        let episode_id = primitives::<UInt32Type>(t, b, "episode_id")?;
        let description = strings(t, b, "description")?;
        Ok(key_event
            .into_iter()
            .zip(description)
            .zip(episode_id)
            .map(|((key_event, description), episode_id)| GoldEpisode {
                key_event,
                episode_id,
                description,
            })
            .collect())
    }
}

/// One row of `episodes`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Episode {
    /// The key event.
    pub key_event: String,
    /// The estimation trial (0 without an LLM; 0..trials with one).
    pub trial: u32,
    /// The episode's id inside its key event and trial.
    pub episode_id: u32,
    /// A short title (LLM: its five fields joined by spaces).
    pub title: String,
    /// LLM: [subject, action, object, time, location]; empty for `clusters`.
    pub title_fields: Vec<String>,
    /// Keywords, most telling first.
    pub keywords: Vec<String>,
    /// LLM: the 2–5 example sentences it extracted; empty for `clusters`.
    pub example_sentences: Vec<String>,
    /// Number of segments assigned to it.
    pub n_segments: u32,
    /// `clusters`, `llm`, or a baseline's name (`kmeans`, `hdbscan`).
    pub source: String,
    /// Distinct articles among its assigned segments.
    pub n_articles: u32,
    /// When it is told ([`EpisodeSpan`]): the first publication date of its assigned segments
    /// (days since 1970-01-01; none when no segment is dated).
    pub first_date: Option<i32>,
    /// The date with the most assigned segments (ties: the earliest).
    pub peak_date: Option<i32>,
    /// The last publication date of its assigned segments.
    pub last_date: Option<i32>,
}

/// The articles and dates of an episode's assigned segments.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EpisodeSpan {
    /// Distinct articles.
    pub n_articles: u32,
    /// First date.
    pub first_date: Option<i32>,
    /// Date with the most segments (ties: the earliest).
    pub peak_date: Option<i32>,
    /// Last date.
    pub last_date: Option<i32>,
}

impl EpisodeSpan {
    /// The span of segments given as (doc_id, doc_date).
    pub fn of(segments: impl IntoIterator<Item = (u32, Option<i32>)>) -> Self {
        let mut docs = std::collections::BTreeSet::new();
        let mut days: std::collections::BTreeMap<i32, usize> = std::collections::BTreeMap::new();
        for (doc, date) in segments {
            docs.insert(doc);
            if let Some(d) = date {
                *days.entry(d).or_default() += 1;
            }
        }
        let peak = days
            .iter()
            .fold(None, |best: Option<(i32, usize)>, (&d, &n)| match best {
                Some((_, m)) if m >= n => best,
                _ => Some((d, n)),
            });
        Self {
            n_articles: docs.len() as u32,
            first_date: days.keys().next().copied(),
            peak_date: peak.map(|(d, _)| d),
            last_date: days.keys().next_back().copied(),
        }
    }
}

impl Table for Episode {
    const NAME: &'static str = "episodes";

    fn schema() -> SchemaRef {
        episodes_schema()
    }

    fn to_batch(rows: &[Self]) -> RecordBatch {
        batch(
            Self::schema(),
            vec![
                string_array(rows.iter().map(|r| r.key_event.as_str())),
                u32_array(rows.iter().map(|r| r.trial)),
                u32_array(rows.iter().map(|r| r.episode_id)),
                string_array(rows.iter().map(|r| r.title.as_str())),
                string_list_array(rows.iter().map(|r| &r.title_fields)),
                string_list_array(rows.iter().map(|r| &r.keywords)),
                string_list_array(rows.iter().map(|r| &r.example_sentences)),
                u32_array(rows.iter().map(|r| r.n_segments)),
                string_array(rows.iter().map(|r| r.source.as_str())),
                u32_array(rows.iter().map(|r| r.n_articles)),
                Arc::new(Date32Array::from_iter(rows.iter().map(|r| r.first_date))),
                Arc::new(Date32Array::from_iter(rows.iter().map(|r| r.peak_date))),
                Arc::new(Date32Array::from_iter(rows.iter().map(|r| r.last_date))),
            ],
        )
    }

    fn from_batch(b: &RecordBatch) -> Result<Vec<Self>, TableError> {
        let t = Self::NAME;
        let key_event = strings(t, b, "key_event")?;
        let trial = primitives::<UInt32Type>(t, b, "trial")?;
        let episode_id = primitives::<UInt32Type>(t, b, "episode_id")?;
        let title = strings(t, b, "title")?;
        let title_fields = string_lists(t, b, "title_fields")?;
        let keywords = string_lists(t, b, "keywords")?;
        let examples = string_lists(t, b, "example_sentences")?;
        let n_segments = primitives::<UInt32Type>(t, b, "n_segments")?;
        let source = strings(t, b, "source")?;
        let n_articles = primitives::<UInt32Type>(t, b, "n_articles")?;
        let date = |name: &str| column::<PrimitiveArray<Date32Type>>(t, b, name);
        let (first, peak, last) = (date("first_date")?, date("peak_date")?, date("last_date")?);
        let opt = |a: &PrimitiveArray<Date32Type>, i: usize| a.is_valid(i).then(|| a.value(i));
        Ok(key_event
            .into_iter()
            .zip(title)
            .zip(source)
            .zip(title_fields.into_iter().zip(keywords).zip(examples))
            .enumerate()
            .map(
                |(
                    i,
                    (((key_event, title), source), ((title_fields, keywords), example_sentences)),
                )| {
                    Episode {
                        key_event,
                        trial: trial[i],
                        episode_id: episode_id[i],
                        title,
                        title_fields,
                        keywords,
                        example_sentences,
                        n_segments: n_segments[i],
                        source,
                        n_articles: n_articles[i],
                        first_date: opt(first, i),
                        peak_date: opt(peak, i),
                        last_date: opt(last, i),
                    }
                },
            )
            .collect())
    }
}

fn string_list_array<'a>(lists: impl Iterator<Item = &'a Vec<String>>) -> ArrayRef {
    let mut builder = ListBuilder::new(StringBuilder::new());
    for list in lists {
        for item in list {
            builder.values().append_value(item);
        }
        builder.append(true);
    }
    Arc::new(builder.finish())
}

/// A non-null `list<utf8>` column as vectors (null items are an error).
fn string_lists(
    t: &'static str,
    b: &RecordBatch,
    name: &str,
) -> Result<Vec<Vec<String>>, TableError> {
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

/// One row of `assignments`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Assignment {
    /// The key event.
    pub key_event: String,
    /// The estimation trial of the episode.
    pub trial: u32,
    /// The detected episode.
    pub episode_id: u32,
    /// Article index.
    pub doc_id: u32,
    /// Segment index inside the article.
    pub seg_idx: u32,
    /// 0 = the episode's top segment: the densest among the episode's own segments by default
    /// (`episodes.rank = "density"`), else the most similar to the episode (`"similarity"`) or
    /// the most confident (`"confidence"`).
    pub rank: u32,
    /// Classification confidence (paper eq. 2).
    pub confidence: f64,
}

impl Table for Assignment {
    const NAME: &'static str = "assignments";

    fn schema() -> SchemaRef {
        assignments_schema()
    }

    fn to_batch(rows: &[Self]) -> RecordBatch {
        batch(
            Self::schema(),
            vec![
                string_array(rows.iter().map(|r| r.key_event.as_str())),
                u32_array(rows.iter().map(|r| r.trial)),
                u32_array(rows.iter().map(|r| r.episode_id)),
                u32_array(rows.iter().map(|r| r.doc_id)),
                u32_array(rows.iter().map(|r| r.seg_idx)),
                u32_array(rows.iter().map(|r| r.rank)),
                Arc::new(Float64Array::from_iter_values(
                    rows.iter().map(|r| r.confidence),
                )),
            ],
        )
    }

    fn from_batch(b: &RecordBatch) -> Result<Vec<Self>, TableError> {
        let t = Self::NAME;
        let key_event = strings(t, b, "key_event")?;
        let trial = primitives::<UInt32Type>(t, b, "trial")?;
        let episode_id = primitives::<UInt32Type>(t, b, "episode_id")?;
        let doc_id = primitives::<UInt32Type>(t, b, "doc_id")?;
        let seg_idx = primitives::<UInt32Type>(t, b, "seg_idx")?;
        let rank = primitives::<UInt32Type>(t, b, "rank")?;
        let confidence = primitives::<Float64Type>(t, b, "confidence")?;
        Ok(key_event
            .into_iter()
            .enumerate()
            .map(|(i, key_event)| Assignment {
                key_event,
                trial: trial[i],
                episode_id: episode_id[i],
                doc_id: doc_id[i],
                seg_idx: seg_idx[i],
                rank: rank[i],
                confidence: confidence[i],
            })
            .collect())
    }
}

/// `terms`: per key event, every vocabulary term with its statistics (ALGORITHM.md §1).
pub fn terms_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key_event_field(),
        utf8_field("term"),
        u32_field("freq"),
        u32_field("bg_freq"),
        Field::new("salience", DataType::Float64, false),
        Field::new("salient", DataType::Boolean, false),
        Field::new("expanded_from", DataType::Utf8, true),
        Field::new("group", DataType::UInt32, true),
    ]))
}

/// `pairs`: per key event, salient term pairs that co-occur, with their discriminative
/// co-occurrence d (ALGORITHM.md §2, paper eq. 1).
pub fn pairs_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key_event_field(),
        utf8_field("a"),
        utf8_field("b"),
        u32_field("freq"),
        Field::new("d", DataType::Float64, false),
    ]))
}

/// One row of `terms`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Term {
    /// The key event.
    pub key_event: String,
    /// The term.
    pub term: String,
    /// Segments of the event containing it.
    pub freq: u32,
    /// Background documents containing it.
    pub bg_freq: u32,
    /// Salience (paper eq. 3); −1 for words with too few occurrences.
    pub salience: f64,
    /// Whether it is in the event's salient set T.
    pub salient: bool,
    /// The salient term it was expanded from, if it joined T by expansion.
    pub expanded_from: Option<String>,
    /// Its synonym group (salient terms only).
    pub group: Option<u32>,
}

impl Table for Term {
    const NAME: &'static str = "terms";

    fn schema() -> SchemaRef {
        terms_schema()
    }

    fn to_batch(rows: &[Self]) -> RecordBatch {
        batch(
            Self::schema(),
            vec![
                string_array(rows.iter().map(|r| r.key_event.as_str())),
                string_array(rows.iter().map(|r| r.term.as_str())),
                u32_array(rows.iter().map(|r| r.freq)),
                u32_array(rows.iter().map(|r| r.bg_freq)),
                Arc::new(Float64Array::from_iter_values(
                    rows.iter().map(|r| r.salience),
                )),
                Arc::new(BooleanArray::from_iter(
                    rows.iter().map(|r| Some(r.salient)),
                )),
                Arc::new(StringArray::from_iter(
                    rows.iter().map(|r| r.expanded_from.as_deref()),
                )),
                Arc::new(UInt32Array::from_iter(rows.iter().map(|r| r.group))),
            ],
        )
    }

    fn from_batch(b: &RecordBatch) -> Result<Vec<Self>, TableError> {
        let t = Self::NAME;
        let key_event = strings(t, b, "key_event")?;
        let term = strings(t, b, "term")?;
        let freq = primitives::<UInt32Type>(t, b, "freq")?;
        let bg_freq = primitives::<UInt32Type>(t, b, "bg_freq")?;
        let salience = primitives::<Float64Type>(t, b, "salience")?;
        let salient = column::<BooleanArray>(t, b, "salient")?;
        no_nulls(t, "salient", salient)?;
        let expanded = column::<StringArray>(t, b, "expanded_from")?;
        let group = column::<UInt32Array>(t, b, "group")?;
        Ok(key_event
            .into_iter()
            .zip(term)
            .enumerate()
            .map(|(i, (key_event, term))| Term {
                key_event,
                term,
                freq: freq[i],
                bg_freq: bg_freq[i],
                salience: salience[i],
                salient: salient.value(i),
                expanded_from: expanded.is_valid(i).then(|| expanded.value(i).to_string()),
                group: group.is_valid(i).then(|| group.value(i)),
            })
            .collect())
    }
}

/// One row of `pairs`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Pair {
    /// The key event.
    pub key_event: String,
    /// First term (a < b).
    pub a: String,
    /// Second term.
    pub b: String,
    /// Segments in which both occur.
    pub freq: u32,
    /// Discriminative co-occurrence d(a, b) (paper eq. 1).
    pub d: f64,
}

impl Table for Pair {
    const NAME: &'static str = "pairs";

    fn schema() -> SchemaRef {
        pairs_schema()
    }

    fn to_batch(rows: &[Self]) -> RecordBatch {
        batch(
            Self::schema(),
            vec![
                string_array(rows.iter().map(|r| r.key_event.as_str())),
                string_array(rows.iter().map(|r| r.a.as_str())),
                string_array(rows.iter().map(|r| r.b.as_str())),
                u32_array(rows.iter().map(|r| r.freq)),
                Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.d))),
            ],
        )
    }

    fn from_batch(b: &RecordBatch) -> Result<Vec<Self>, TableError> {
        let t = Self::NAME;
        let key_event = strings(t, b, "key_event")?;
        let a = strings(t, b, "a")?;
        let bb = strings(t, b, "b")?;
        let freq = primitives::<UInt32Type>(t, b, "freq")?;
        let d = primitives::<Float64Type>(t, b, "d")?;
        Ok(key_event
            .into_iter()
            .zip(a.into_iter().zip(bb))
            .enumerate()
            .map(|(i, (key_event, (a, b)))| Pair {
                key_event,
                a,
                b,
                freq: freq[i],
                d: d[i],
            })
            .collect())
    }
}

/// `fragments`: the episode fragments of every event (ALGORITHM.md §3), with the candidate
/// cluster of those from top articles (§4).
pub fn fragments_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key_event_field(),
        u32_field("fragment_id"),
        u32_field("doc_id"),
        u32_field("first_seg_idx"),
        u32_field("last_seg_idx"),
        Field::new("cluster", DataType::UInt32, true),
    ]))
}

/// One row of `fragments`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FragmentRow {
    /// The key event.
    pub key_event: String,
    /// 0-based id in article order.
    pub fragment_id: u32,
    /// Its article.
    pub doc_id: u32,
    /// First segment.
    pub first_seg_idx: u32,
    /// Last segment.
    pub last_seg_idx: u32,
    /// Candidate cluster, for fragments of top articles.
    pub cluster: Option<u32>,
}

impl Table for FragmentRow {
    const NAME: &'static str = "fragments";

    fn schema() -> SchemaRef {
        fragments_schema()
    }

    fn to_batch(rows: &[Self]) -> RecordBatch {
        batch(
            Self::schema(),
            vec![
                string_array(rows.iter().map(|r| r.key_event.as_str())),
                u32_array(rows.iter().map(|r| r.fragment_id)),
                u32_array(rows.iter().map(|r| r.doc_id)),
                u32_array(rows.iter().map(|r| r.first_seg_idx)),
                u32_array(rows.iter().map(|r| r.last_seg_idx)),
                Arc::new(UInt32Array::from_iter(rows.iter().map(|r| r.cluster))),
            ],
        )
    }

    fn from_batch(b: &RecordBatch) -> Result<Vec<Self>, TableError> {
        let t = Self::NAME;
        let key_event = strings(t, b, "key_event")?;
        let fragment_id = primitives::<UInt32Type>(t, b, "fragment_id")?;
        let doc_id = primitives::<UInt32Type>(t, b, "doc_id")?;
        let first = primitives::<UInt32Type>(t, b, "first_seg_idx")?;
        let last = primitives::<UInt32Type>(t, b, "last_seg_idx")?;
        let cluster = column::<UInt32Array>(t, b, "cluster")?;
        Ok(key_event
            .into_iter()
            .enumerate()
            .map(|(i, key_event)| FragmentRow {
                key_event,
                fragment_id: fragment_id[i],
                doc_id: doc_id[i],
                first_seg_idx: first[i],
                last_seg_idx: last[i],
                cluster: cluster.is_valid(i).then(|| cluster.value(i)),
            })
            .collect())
    }
}

/// One row of `rejected`: an input row `epimine import --articles --on-error skip` left out,
/// and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// The input file.
    pub file: String,
    /// 1-based row (Parquet) or line (JSON Lines, CSV) in the file.
    pub row: u32,
    /// The column at fault, when one is.
    pub column: Option<String>,
    /// Why the row was left out.
    pub reason: String,
    /// The row as JSON (its configured columns), when it could be read.
    pub record: Option<String>,
}

impl Table for Rejected {
    const NAME: &'static str = "rejected";

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            utf8_field("file"),
            u32_field("row"),
            Field::new("column", DataType::Utf8, true),
            utf8_field("reason"),
            Field::new("record", DataType::Utf8, true),
        ]))
    }

    fn to_batch(rows: &[Self]) -> RecordBatch {
        batch(
            Self::schema(),
            vec![
                string_array(rows.iter().map(|r| r.file.as_str())),
                u32_array(rows.iter().map(|r| r.row)),
                Arc::new(StringArray::from_iter(
                    rows.iter().map(|r| r.column.as_deref()),
                )),
                string_array(rows.iter().map(|r| r.reason.as_str())),
                Arc::new(StringArray::from_iter(
                    rows.iter().map(|r| r.record.as_deref()),
                )),
            ],
        )
    }

    fn from_batch(b: &RecordBatch) -> Result<Vec<Self>, TableError> {
        let t = Self::NAME;
        let file = strings(t, b, "file")?;
        let row = primitives::<UInt32Type>(t, b, "row")?;
        let column_ = column::<StringArray>(t, b, "column")?;
        let reason = strings(t, b, "reason")?;
        let record = column::<StringArray>(t, b, "record")?;
        Ok(file
            .into_iter()
            .zip(reason)
            .enumerate()
            .map(|(i, (file, reason))| Rejected {
                file,
                row: row[i],
                column: column_.is_valid(i).then(|| column_.value(i).to_string()),
                reason,
                record: record.is_valid(i).then(|| record.value(i).to_string()),
            })
            .collect())
    }
}
