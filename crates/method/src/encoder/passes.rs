//! What the encoder computes: sentence embeddings, static word vectors, or both from one
//! forward pass, and the padding a batching costs ([`Encoder::positions`]).

use burn::tensor::Tensor;

use super::config::Pooling;
use super::error::EncoderError;
use super::front::Encoder;
use super::host::{host_block, tensor_values};
use super::model::EncoderInput;
use super::ops::EncoderBackend;
use super::shapes;
use super::words::{
    collect_words, split_parts, Occurrence, Vectors, WordSum, WordSums, WordVector,
    XCLASS_MAX_TOKENS,
};
use super::{pooling, tokenize};

impl<B: EncoderBackend> Encoder<B> {
    /// Token positions of the sentence inputs of `parts` as they are batched (each part on its
    /// own, as [`Self::sentence_parts`] and [`Self::encode_parts`] batch them): `(real,
    /// padded)`, where `padded` counts every position a forward pass computes (pad rows
    /// included). The padding
    /// share is `padded / real - 1`.
    pub fn positions(&self, parts: &[&[&str]]) -> Result<(usize, usize), EncoderError> {
        let (mut real, mut padded) = (0, 0);
        for texts in parts {
            let sequences: Vec<Vec<u32>> = self
                .sentence_tokens(texts)?
                .into_iter()
                .map(|t| t.ids)
                .collect();
            let buckets = self.sentence_buckets();
            for batch in self.batches(&sequences, 0..sequences.len()) {
                real += batch.iter().map(|&i| sequences[i].len()).sum::<usize>();
                let [rows, seq] = self.shape_of(&sequences, &batch, &buckets);
                padded += rows * seq;
            }
        }
        Ok((real, padded))
    }

    /// Pools one batch's last layer into sentence vectors, `[batch, hidden]`.
    pub(super) fn pool(&self, hidden: Tensor<B, 3>, input: &EncoderInput<B>) -> Tensor<B, 2> {
        let pooled = match self.sentence.pooling {
            Pooling::Mean => pooling::mean_pool(hidden, input.padding.clone()),
            Pooling::Cls => pooling::cls_pool(hidden),
            Pooling::Max => pooling::max_pool(hidden, input.padding.clone()),
        };
        if self.sentence.normalize {
            pooling::l2_normalize(pooled)
        } else {
            pooled
        }
    }

    /// The sentence inputs of `texts`, tokenised on rayon's pool (in order).
    pub(super) fn sentence_tokens(
        &self,
        texts: &[&str],
    ) -> Result<Vec<tokenize::SentenceTokens>, EncoderError> {
        use rayon::prelude::*;
        texts
            .par_iter()
            .map(|t| self.tokenizer.sentence(t))
            .collect()
    }

    /// One embedding per text, as sentence-transformers computes it for this model.
    pub fn sentence_embeddings(&self, texts: &[&str]) -> Result<Vectors, EncoderError> {
        let mut parts = self.sentence_parts(&[texts])?;
        Ok(parts.pop().expect("one part"))
    }

    /// [`Self::sentence_embeddings`] of several parts at once, each batched on its own exactly
    /// as [`Self::encode_parts`] batches it (so a part's floats do not depend on the others).
    pub fn sentence_parts(&self, parts: &[&[&str]]) -> Result<Vec<Vectors>, EncoderError> {
        let dim = self.dim();
        let mut sequences: Vec<Vec<u32>> = Vec::new();
        let mut batches: Vec<Vec<usize>> = Vec::new();
        for texts in parts {
            let first = sequences.len();
            sequences.extend(self.sentence_tokens(texts)?.into_iter().map(|t| t.ids));
            batches.extend(self.batches(&sequences, first..sequences.len()));
        }
        let mut data = vec![0.0f32; sequences.len() * dim];
        let last = self.last_layer();
        self.run_batches(
            &sequences,
            &batches,
            &self.sentence_buckets(),
            &[last],
            |input, mut hidden| tensor_values(self.pool(hidden.remove(0), input).into_data()),
            |batch, values| {
                for (row, &i) in batch.iter().enumerate() {
                    data[i * dim..(i + 1) * dim]
                        .copy_from_slice(&values[row * dim..(row + 1) * dim]);
                }
            },
        );
        Ok(split_parts(&data, parts, dim))
    }

    /// The static word table of a key event whose texts are `texts`, from hidden layer `layer`
    /// (0 = embeddings, [`Self::last_layer`] = X-Class's default), computed as X-Class does.
    pub fn word_vectors(
        &self,
        texts: &[&str],
        layer: usize,
    ) -> Result<Vec<WordVector>, EncoderError> {
        self.check_layer(layer)?;
        let model_max = XCLASS_MAX_TOKENS.min(self.config.max_tokens());
        let mut sums = WordSums::new(self.dim());
        let mut sequences = Vec::new();
        let mut occurrences: Vec<Vec<Occurrence>> = Vec::new();
        for text in texts {
            let chunks = tokenize::word_chunks(&self.tokenizer, text, model_max)?;
            let first = sequences.len();
            occurrences.extend(chunks.chunks.iter().map(|_| Vec::new()));
            for (word, &(chunk, start, end)) in chunks.words.iter().zip(&chunks.spans) {
                if tokenize::is_punctuation_only(word) || start == end {
                    continue;
                }
                let word = sums.id(word);
                // +1: positions in the chunk count the start token.
                occurrences[first + chunk].push(Occurrence {
                    word,
                    start: start + 1,
                    end: end + 1,
                });
            }
            sequences.extend(chunks.chunks);
        }
        // Chunks no word is read from need no forward pass.
        for (seq, occ) in sequences.iter_mut().zip(&occurrences) {
            if occ.is_empty() {
                seq.clear();
            }
        }
        self.run(
            &sequences,
            &shapes::length_buckets(model_max),
            &[layer],
            |_, mut hidden| host_block(hidden.remove(0)),
            |batch, block| collect_words(&mut sums, batch, &occurrences, &block),
        );
        Ok(sums.finish())
    }

    /// Sentence embeddings and a word table from one forward pass over the sentence inputs
    /// (for one model serving both roles). The embeddings equal [`Self::sentence_embeddings`];
    /// the words are the tokenizer's words of each (uncleaned) text, read from the same
    /// sequence, truncated at `max_seq_length` (a word cut by truncation is dropped), at
    /// `layer`. On clean texts shorter than `max_seq_length` they equal
    /// [`Self::word_vectors`].
    pub fn encode_both(
        &self,
        texts: &[&str],
        layer: usize,
    ) -> Result<(Vectors, Vec<WordVector>), EncoderError> {
        let (embeddings, sums) = self.encode_both_sums(texts, layer)?;
        Ok((embeddings, sums.into_iter().map(WordVector::from).collect()))
    }

    /// [`Self::encode_both`] with the word table as sums, so that the tables of parts of an
    /// event (encoded anywhere) add up to the whole's.
    pub fn encode_both_sums(
        &self,
        texts: &[&str],
        layer: usize,
    ) -> Result<(Vectors, Vec<WordSum>), EncoderError> {
        let mut out = self.encode_parts(&[texts], layer)?;
        Ok(out.pop().expect("one part"))
    }

    /// [`Self::encode_both_sums`] of several parts at once: each part is batched on its own,
    /// exactly as alone (so its floats are the same), but the batches of all parts share the
    /// waves of concurrent forward passes, so many small parts keep every core busy.
    pub fn encode_parts(
        &self,
        parts: &[&[&str]],
        layer: usize,
    ) -> Result<Vec<(Vectors, Vec<WordSum>)>, EncoderError> {
        self.check_layer(layer)?;
        let dim = self.dim();
        let mut sequences: Vec<Vec<u32>> = Vec::new();
        let mut occurrences: Vec<Vec<Occurrence>> = Vec::new();
        let mut part_of: Vec<usize> = Vec::new();
        let mut sums: Vec<WordSums> = Vec::with_capacity(parts.len());
        let mut batches: Vec<Vec<usize>> = Vec::new();
        for (p, texts) in parts.iter().enumerate() {
            let first = sequences.len();
            let tokens = self.sentence_tokens(texts)?;
            let mut part_sums = WordSums::new(dim);
            for (text, tok) in texts.iter().zip(&tokens) {
                let words = self.tokenizer.words(text)?;
                let mut occ: Vec<Occurrence> = Vec::new();
                let mut t = 0;
                while t < tok.ids.len() {
                    let Some(w) = tok.word_ids[t] else {
                        t += 1;
                        continue;
                    };
                    let start = t;
                    while t < tok.ids.len() && tok.word_ids[t] == Some(w) {
                        t += 1;
                    }
                    let Some(word) = words.get(w as usize) else {
                        continue;
                    };
                    let complete = self.tokenizer.pieces(word)?.len() == t - start;
                    if complete && !tokenize::is_punctuation_only(word) {
                        occ.push(Occurrence {
                            word: part_sums.id(word),
                            start,
                            end: t,
                        });
                    }
                }
                occurrences.push(occ);
                part_of.push(p);
            }
            sequences.extend(tokens.into_iter().map(|t| t.ids));
            batches.extend(self.batches(&sequences, first..sequences.len()));
            sums.push(part_sums);
        }
        let mut data = vec![0.0f32; sequences.len() * dim];
        let last = self.last_layer();
        self.run_batches(
            &sequences,
            &batches,
            &self.sentence_buckets(),
            &[last, layer],
            |input, mut hidden| {
                let words_layer = host_block(hidden.pop().expect("two layers asked"));
                let pooled = self.pool(hidden.pop().expect("two layers asked"), input);
                (tensor_values(pooled.into_data()), words_layer)
            },
            |batch, (values, block)| {
                for (row, &i) in batch.iter().enumerate() {
                    data[i * dim..(i + 1) * dim]
                        .copy_from_slice(&values[row * dim..(row + 1) * dim]);
                }
                collect_words(&mut sums[part_of[batch[0]]], batch, &occurrences, &block);
            },
        );
        let mut out = Vec::with_capacity(parts.len());
        for (vectors, part_sums) in split_parts(&data, parts, dim).into_iter().zip(sums) {
            out.push((vectors, part_sums.finish_sums()));
        }
        Ok(out)
    }
}
