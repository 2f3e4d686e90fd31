//! Tokenization for both encoders (docs/method.md §1 static word vectors, §6 sentence
//! embeddings), on the model's own `tokenizer.json` (Hugging Face `tokenizers`).
//!
//! - Sentences are tokenized as sentence-transformers does: special tokens added, truncated at
//!   the model's `max_seq_length`, no padding. The published `tokenizer.json` of
//!   all-MiniLM-L6-v2 carries fixed padding and truncation at 128; both are overridden (the
//!   batcher pads to the longest sequence of each batch).
//! - Words are tokenized as X-Class's `static_representations.py` does: the text is cleaned
//!   ([`clean_text`]), split into words by the tokenizer's normalizer and pre-tokenizer (for
//!   BERT-style tokenizers: lower-casing, accent stripping, splitting at whitespace and at every
//!   punctuation character, as BERT's `BasicTokenizer`), and each word into word pieces by the
//!   tokenizer's model (`WordpieceTokenizer`).

use std::path::{Path, PathBuf};

use tokenizers::{
    Model, Normalizer, OffsetReferential, OffsetType, PreTokenizedString, PreTokenizer, Tokenizer,
    TruncationDirection, TruncationParams, TruncationStrategy,
};

use super::error::EncoderError;

/// X-Class's text cleaning: every character outside `[A-Za-z0-9(),.!?"']` becomes a space
/// (lower-casing is the tokenizer's).
pub fn clean_text(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "(),.!?\"'".contains(c) {
                c
            } else {
                ' '
            }
        })
        .collect()
}

/// Whether a word has no letter or digit (such words are dropped from the word table, as
/// X-Class drops words that are empty once ASCII punctuation is removed).
pub fn is_punctuation_only(word: &str) -> bool {
    !word.chars().any(char::is_alphanumeric)
}

/// A sentence's tokens, with the word each token belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentenceTokens {
    /// Token ids, special tokens included.
    pub ids: Vec<u32>,
    /// The index of each token's word in [`TextTokenizer::words`] of the same text (`None` for
    /// special tokens).
    pub word_ids: Vec<Option<u32>>,
}

/// A model's tokenizer with sentence-transformers' settings.
#[derive(Debug, Clone)]
pub struct TextTokenizer {
    tokenizer: Tokenizer,
    path: PathBuf,
    /// Start and end tokens wrapped around a sequence (`[CLS]`/`[SEP]`, `<s>`/`</s>`).
    bos_eos: (u32, u32),
}

impl TextTokenizer {
    /// Loads `tokenizer.json`, truncating at `max_seq_length` tokens and never padding.
    pub fn from_file(path: &Path, max_seq_length: usize) -> Result<Self, EncoderError> {
        let err = |reason: String| EncoderError::Tokenizer {
            path: path.to_path_buf(),
            reason,
        };
        let mut tokenizer = Tokenizer::from_file(path).map_err(|e| err(e.to_string()))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                direction: TruncationDirection::Right,
                max_length: max_seq_length,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
            }))
            .map_err(|e| err(e.to_string()))?;
        let empty = tokenizer.encode("", true).map_err(|e| err(e.to_string()))?;
        let bos_eos = match empty.get_ids() {
            [bos, eos] => (*bos, *eos),
            other => {
                return Err(err(format!(
                    "expected a start and an end token around an empty text, got {other:?}"
                )))
            }
        };
        Ok(Self {
            tokenizer,
            path: path.to_path_buf(),
            bos_eos,
        })
    }

    fn err(&self, reason: String) -> EncoderError {
        EncoderError::Tokenizer {
            path: self.path.clone(),
            reason,
        }
    }

    /// The start and end token ids.
    pub fn bos_eos(&self) -> (u32, u32) {
        self.bos_eos
    }

    /// A sentence's tokens as sentence-transformers feeds them to the model.
    pub fn sentence(&self, text: &str) -> Result<SentenceTokens, EncoderError> {
        let encoding = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| self.err(e.to_string()))?;
        Ok(SentenceTokens {
            ids: encoding.get_ids().to_vec(),
            word_ids: encoding.get_word_ids().to_vec(),
        })
    }

    /// The words of a text: the tokenizer's normalizer and pre-tokenizer (BERT's basic
    /// tokenization for BERT and MPNet tokenizers).
    pub fn words(&self, text: &str) -> Result<Vec<String>, EncoderError> {
        let mut pre = PreTokenizedString::from(text);
        if let Some(normalizer) = self.tokenizer.get_normalizer() {
            pre.normalize(|s| normalizer.normalize(s))
                .map_err(|e| self.err(e.to_string()))?;
        }
        if let Some(pre_tokenizer) = self.tokenizer.get_pre_tokenizer() {
            pre_tokenizer
                .pre_tokenize(&mut pre)
                .map_err(|e| self.err(e.to_string()))?;
        }
        Ok(pre
            .get_splits(OffsetReferential::Normalized, OffsetType::Byte)
            .into_iter()
            .map(|(word, _, _)| word.to_string())
            .collect())
    }

    /// The word pieces of one word (`WordpieceTokenizer.tokenize`: greedy longest match,
    /// `[UNK]` for a word it cannot split or longer than 100 characters).
    pub fn pieces(&self, word: &str) -> Result<Vec<u32>, EncoderError> {
        Ok(self
            .tokenizer
            .get_model()
            .tokenize(word)
            .map_err(|e| self.err(e.to_string()))?
            .into_iter()
            .map(|t| t.id)
            .collect())
    }
}

/// A text cut into model-sized chunks the way X-Class's `prepare_sentence` cuts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WordChunks {
    /// The words, in text order (punctuation included).
    pub words: Vec<String>,
    /// Per word: its chunk, and the range of its pieces inside that chunk (counting from the
    /// first piece, i.e. without the start token).
    pub spans: Vec<(usize, usize, usize)>,
    /// Token ids of every chunk, start and end tokens included.
    pub chunks: Vec<Vec<u32>>,
}

/// X-Class's `prepare_sentence`: pieces are packed into chunks of at most `model_max_tokens - 2`
/// (510 for BERT) between a start and an end token. When the next word does not fit, the chunk
/// is closed and the next one starts with the last `(model_max_tokens - 2) / 2` pieces (255) of
/// the closed one, so consecutive chunks overlap; a word is read from the chunk it was placed in.
pub fn word_chunks(
    tokenizer: &TextTokenizer,
    text: &str,
    model_max_tokens: usize,
) -> Result<WordChunks, EncoderError> {
    let max_tokens = model_max_tokens - 2;
    let window = max_tokens / 2;
    let (bos, eos) = tokenizer.bos_eos();
    let words = tokenizer.words(&clean_text(text))?;
    let mut spans = Vec::with_capacity(words.len());
    let mut chunks = Vec::new();
    let mut current: Vec<u32> = Vec::new();
    let close = |current: &mut Vec<u32>, chunks: &mut Vec<Vec<u32>>| {
        let mut chunk = Vec::with_capacity(current.len() + 2);
        chunk.push(bos);
        chunk.extend_from_slice(current);
        chunk.push(eos);
        chunks.push(chunk);
        let keep = current.len().saturating_sub(window);
        if window > 0 {
            current.drain(..keep);
        } else {
            current.clear();
        }
    };
    for word in &words {
        let pieces = tokenizer.pieces(word)?;
        if current.len() + pieces.len() > max_tokens {
            close(&mut current, &mut chunks);
        }
        spans.push((chunks.len(), current.len(), current.len() + pieces.len()));
        current.extend(pieces);
    }
    close(&mut current, &mut chunks);
    Ok(WordChunks {
        words,
        spans,
        chunks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleaning_keeps_only_xclass_characters() {
        assert_eq!(
            clean_text("U.S.-backed: “café” 3,000 (ok)! <b>"),
            "U.S. backed   caf   3,000 (ok)!  b "
        );
    }

    #[test]
    fn punctuation_only_words() {
        assert!(is_punctuation_only("."));
        assert!(is_punctuation_only("“"));
        assert!(!is_punctuation_only("a"));
        assert!(!is_punctuation_only("3"));
    }
}
