//! What the encoders return (row-major [`Vectors`], [`WordVector`]s, [`WordSum`]s) and how a
//! word's occurrences are summed from a batch's hidden states.

use std::collections::BTreeMap;

use super::host::HostBlock;

/// X-Class's model input limit for the word chunks (`model_max_tokens = 512`).
pub const XCLASS_MAX_TOKENS: usize = 512;

/// Row-major vectors of one width.
#[derive(Debug, Clone, PartialEq)]
pub struct Vectors {
    /// Width of every vector.
    pub dim: usize,
    /// `len × dim` values.
    pub data: Vec<f32>,
}

impl Vectors {
    /// Number of vectors.
    pub fn len(&self) -> usize {
        self.data.len().checked_div(self.dim).unwrap_or(0)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Vector `i`.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }
}

/// One row of the static word table.
#[derive(Debug, Clone, PartialEq)]
pub struct WordVector {
    /// The word (as the tokenizer normalises it: lower-cased for uncased models).
    pub word: String,
    /// Occurrences in the key event.
    pub count: u32,
    /// Mean of the occurrences' vectors.
    pub vector: Vec<f32>,
}

/// The sum of a word's occurrence vectors over some texts: word tables of parts of an event
/// add up ([`WordSum::add`], in a fixed order) to the table of the whole ([`WordSum::mean`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WordSum {
    /// The word.
    pub word: String,
    /// Occurrences.
    pub count: u32,
    /// Sum of the occurrences' vectors (each the mean of the word's pieces).
    pub sum: Vec<f64>,
}

impl WordSum {
    /// Adds another part's sum of the same word.
    pub fn add(&mut self, other: &WordSum) {
        self.count += other.count;
        for (s, o) in self.sum.iter_mut().zip(&other.sum) {
            *s += o;
        }
    }

    /// The mean vector.
    pub fn mean(&self) -> Vec<f32> {
        self.sum
            .iter()
            .map(|s| (s / f64::from(self.count)) as f32)
            .collect()
    }
}

impl From<WordSum> for WordVector {
    fn from(w: WordSum) -> Self {
        WordVector {
            vector: w.mean(),
            word: w.word,
            count: w.count,
        }
    }
}

/// A word occurrence inside one model sequence: its word and its pieces' positions.
#[derive(Debug, Clone, Copy)]
pub(super) struct Occurrence {
    pub(super) word: usize,
    pub(super) start: usize,
    pub(super) end: usize,
}

/// Sums of occurrence vectors per word (f64, so the mean does not depend on the order).
pub(super) struct WordSums {
    pub(super) dim: usize,
    pub(super) words: Vec<String>,
    pub(super) index: BTreeMap<String, usize>,
    pub(super) sums: Vec<(u32, Vec<f64>)>,
}

impl WordSums {
    pub(super) fn new(dim: usize) -> Self {
        Self {
            dim,
            words: Vec::new(),
            index: BTreeMap::new(),
            sums: Vec::new(),
        }
    }

    pub(super) fn id(&mut self, word: &str) -> usize {
        if let Some(&i) = self.index.get(word) {
            return i;
        }
        let i = self.words.len();
        self.words.push(word.to_string());
        self.index.insert(word.to_string(), i);
        self.sums.push((0, vec![0.0; self.dim]));
        i
    }

    /// Adds the mean of `rows[start..end]` of a `[seq, dim]` block to `word`.
    pub(super) fn add(&mut self, occ: Occurrence, block: &[f32]) {
        let dim = self.dim;
        let (count, sum) = &mut self.sums[occ.word];
        let n = (occ.end - occ.start) as f64;
        let mut mean = vec![0.0f64; dim];
        for t in occ.start..occ.end {
            for (m, &v) in mean.iter_mut().zip(&block[t * dim..(t + 1) * dim]) {
                *m += f64::from(v);
            }
        }
        for (s, m) in sum.iter_mut().zip(&mean) {
            *s += m / n;
        }
        *count += 1;
    }

    /// The sums, sorted by word.
    pub(super) fn finish_sums(self) -> Vec<WordSum> {
        let mut out: Vec<WordSum> = self
            .words
            .into_iter()
            .zip(self.sums)
            .filter(|(_, (count, _))| *count > 0)
            .map(|(word, (count, sum))| WordSum { word, count, sum })
            .collect();
        out.sort_by(|a, b| a.word.cmp(&b.word));
        out
    }

    /// The table, sorted by word.
    pub(super) fn finish(self) -> Vec<WordVector> {
        self.finish_sums()
            .into_iter()
            .map(WordVector::from)
            .collect()
    }
}

/// The rows of `data` (`dim` values each, the parts' texts in order) cut into one [`Vectors`] a
/// part.
pub(super) fn split_parts(data: &[f32], parts: &[&[&str]], dim: usize) -> Vec<Vectors> {
    let mut rest = data;
    parts
        .iter()
        .map(|texts| {
            let (head, tail) = rest.split_at(texts.len() * dim);
            rest = tail;
            Vectors {
                dim,
                data: head.to_vec(),
            }
        })
        .collect()
}

/// Adds the occurrences of every sequence of a batch.
pub(super) fn collect_words(
    sums: &mut WordSums,
    batch: &[usize],
    occurrences: &[Vec<Occurrence>],
    block: &HostBlock,
) {
    let (seq, dim, values) = (block.seq, sums.dim, &block.values);
    for (row, &i) in batch.iter().enumerate() {
        let block = &values[row * seq * dim..(row + 1) * seq * dim];
        for &occ in &occurrences[i] {
            sums.add(occ, block);
        }
    }
}
