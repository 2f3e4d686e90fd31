//! A general-English background made from word frequencies (docs/method.md §1): the default when
//! a run names no background, so that a newcomer with one story has the contrast the method needs.
//!
//! The frequencies are those of the `wordfreq` package (version [`VERSION`], its `large_en`
//! list: English word frequencies from news, Wikipedia, subtitles, books, web text and social
//! media, by Robyn Speer; code Apache-2.0, data CC BY-SA 4.0). Its wheel is fetched from PyPI as
//! the model is (`$EPIMINE_PYPI_URL`), checked against the sha256 the registry lists and the one
//! pinned here, and turned once into a background table (`term`, `doc_freq`; N_bg in the
//! metadata) in the model cache, beside the models.
//!
//! §1's salience needs document frequencies, `bgf(w)` out of `N_bg` documents; wordfreq gives a
//! word's share of running text `f(w)`. A background of [`N_DOCS`] documents of [`DOC_TOKENS`]
//! tokens each, the words drawn independently, holds w in `N_bg · (1 − e^(−f(w)·L))` of them
//! (rounded; words in no document are left out, as a background text's absent words are).
//! [`N_DOCS`] is the size of the paper's background (~4,000 NYT articles); [`DOC_TOKENS`] is a
//! news article's length in words (the BBC background's articles: 394 on average). Neither was
//! tuned on the development set.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::models::{self as fetch, Sources};
use crate::terms;

/// The name that asks for this background (`--background wordfreq`; also the default).
pub const NAME: &str = "wordfreq";
/// The PyPI package.
pub const PACKAGE: &str = "wordfreq";
/// Its pinned version.
pub const VERSION: &str = "3.1.1";
/// The sha256 of `wordfreq-3.1.1-py3-none-any.whl`, as PyPI lists it.
pub const WHEEL_SHA256: &str = "4b1c6ecffc6198be3396d5cf871c4423ca71c907c231348d352dd54d62b97473";
/// The frequency list inside the wheel.
pub const DATA_FILE: &str = "wordfreq/data/large_en.msgpack.gz";
/// N_bg of the table.
pub const N_DOCS: u32 = 4_000;
/// The tokens of one background document.
pub const DOC_TOKENS: f64 = 400.0;
/// Metadata key naming where the table's counts come from.
pub const SOURCE_KEY: &str = "epimine.background.source";

/// Errors of the wordfreq background.
#[derive(Debug, thiserror::Error)]
pub enum WordfreqError {
    /// The wheel could not be fetched.
    #[error(
        "cannot fetch the default background (wordfreq {VERSION} from PyPI, {pypi}): {reason}\n  \
         without network: `--background corpus` takes the corpus's own articles, or give a \
         general-news text (--background FILE, one article a line)"
    )]
    Fetch {
        /// The registry tried.
        pypi: String,
        /// Why.
        reason: String,
    },
    /// The wheel or its frequency list is not what this version holds.
    #[error("{file}: {reason}")]
    Data {
        /// The file.
        file: String,
        /// What is wrong.
        reason: String,
    },
    /// No model cache to put it in.
    #[error(transparent)]
    Cache(#[from] fetch::FetchError),
    /// Reading or writing the cache failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Writing the table failed.
    #[error(transparent)]
    Storage(#[from] crate::storage::StorageError),
}

/// The table's path in a model cache.
pub fn table_path(cache: &Path) -> PathBuf {
    cache.join(format!("wordfreq-{VERSION}-en.parquet"))
}

/// Decodes wordfreq's "cBpack" (msgpack): a header `{"format": "cB", "version": 1}`, then one
/// list of words per centibel of frequency (list i: the words of frequency `10^(−i/100)`).
pub fn decode_cbpack(mut bytes: &[u8]) -> Result<Vec<Vec<String>>, String> {
    let rd = &mut bytes;
    let lists = rmp::decode::read_array_len(rd).map_err(|e| format!("not a cBpack list: {e}"))?;
    if lists == 0 {
        return Err("an empty cBpack list".into());
    }
    let entries = rmp::decode::read_map_len(rd).map_err(|e| format!("no cBpack header: {e}"))?;
    let (mut format, mut version) = (None, None);
    for _ in 0..entries {
        match read_str(rd)?.as_str() {
            "format" => format = Some(read_str(rd)?),
            "version" => {
                version = Some(
                    rmp::decode::read_int::<u64, _>(rd)
                        .map_err(|e| format!("the header's version: {e}"))?,
                )
            }
            key => return Err(format!("an unknown header key `{key}`")),
        }
    }
    if format.as_deref() != Some("cB") || version != Some(1) {
        return Err(format!(
            "the header says format {format:?}, version {version:?}; expected \"cB\", 1"
        ));
    }
    let mut buckets = Vec::with_capacity(lists as usize - 1);
    for i in 1..lists {
        let n = rmp::decode::read_array_len(rd).map_err(|e| format!("list {i}: {e}"))?;
        let mut words = Vec::with_capacity(n as usize);
        for _ in 0..n {
            words.push(read_str(rd).map_err(|e| format!("list {i}: {e}"))?);
        }
        buckets.push(words);
    }
    if !rd.is_empty() {
        return Err(format!("{} bytes after the last list", rd.len()));
    }
    Ok(buckets)
}

fn read_str(rd: &mut &[u8]) -> Result<String, String> {
    let len = rmp::decode::read_str_len(rd).map_err(|e| format!("not a string: {e}"))? as usize;
    if rd.len() < len {
        return Err("a string runs past the end".into());
    }
    let (s, rest) = rd.split_at(len);
    *rd = rest;
    String::from_utf8(s.to_vec()).map_err(|_| "a string is not UTF-8".into())
}

/// Document frequencies of the background (see the module's doc): each word is tokenized as the
/// corpus is ([`terms::tokens`]) and its tokens' frequencies summed, in list order. Sorted by term.
pub fn doc_freq(buckets: &[Vec<String>]) -> Vec<(String, u32)> {
    let mut freq: BTreeMap<String, f64> = BTreeMap::new();
    for (centibels, words) in buckets.iter().enumerate() {
        let f = 10f64.powf(-(centibels as f64) / 100.0);
        for word in words {
            for token in terms::tokens(word) {
                *freq.entry(token).or_default() += f;
            }
        }
    }
    let n = f64::from(N_DOCS);
    freq.into_iter()
        .filter_map(|(term, f)| {
            let docs = (n * -(-f * DOC_TOKENS).exp_m1()).round();
            (docs >= 1.0).then(|| (term, (docs as u32).min(N_DOCS)))
        })
        .collect()
}

/// The table in `cache` (made there from the wheel when missing); returns its path and whether
/// it was fetched now. Two processes sharing a cache may both fetch: each writes the same table.
pub async fn fetch(cache: &Path, sources: &Sources) -> Result<(PathBuf, bool), WordfreqError> {
    let target = table_path(cache);
    if target.is_file() {
        return Ok((target, false));
    }
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| WordfreqError::Io { path, source }
    };
    std::fs::create_dir_all(cache).map_err(io(cache))?;
    let wheel_path = fetch::partial_path(cache, &format!("wordfreq-{VERSION}"), ".whl");
    let fetched = async {
        let failed = |reason: String| WordfreqError::Fetch {
            pypi: sources.pypi.clone(),
            reason,
        };
        let client = fetch::http_client().map_err(failed)?;
        let (wheel, sha) =
            fetch::pypi::pypi_wheel(&client, sources, PACKAGE, Some(VERSION), &wheel_path)
                .await
                .map_err(failed)?;
        if !sha.eq_ignore_ascii_case(WHEEL_SHA256) {
            return Err(WordfreqError::Data {
                file: wheel,
                reason: format!("sha256 {sha}, not the {WHEEL_SHA256} of wordfreq {VERSION}"),
            });
        }
        let buckets = read_wheel(&wheel_path).map_err(|reason| WordfreqError::Data {
            file: format!("{wheel}:{DATA_FILE}"),
            reason,
        })?;
        Ok(buckets)
    }
    .await;
    let _ = std::fs::remove_file(&wheel_path);
    let doc_freq = doc_freq(&fetched?);
    let source = format!("wordfreq {VERSION} {DATA_FILE} (CC BY-SA 4.0)");
    let path = target.to_str().ok_or_else(|| WordfreqError::Io {
        path: target.clone(),
        source: std::io::Error::other("not a UTF-8 path"),
    })?;
    super::table::write_table(
        path,
        &doc_freq,
        u64::from(N_DOCS),
        vec![(SOURCE_KEY.to_string(), source)],
    )
    .await?;
    Ok((target, true))
}

/// The frequency lists inside the wheel.
fn read_wheel(wheel: &Path) -> Result<Vec<Vec<String>>, String> {
    let file = std::fs::File::open(wheel).map_err(|e| e.to_string())?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| e.to_string())?;
    let entry = archive
        .by_name(DATA_FILE)
        .map_err(|e| format!("no {DATA_FILE} in the wheel: {e}"))?;
    let mut packed = Vec::new();
    flate2::read::GzDecoder::new(entry)
        .read_to_end(&mut packed)
        .map_err(|e| format!("not gzip: {e}"))?;
    decode_cbpack(&packed)
}

/// The table's path in the model cache (`$EPIMINE_MODELS`, else `~/.cache/epimine/models`),
/// fetched on first use with a progress line.
pub async fn resolve() -> Result<PathBuf, WordfreqError> {
    let cache = fetch::model_cache(None)?;
    let target = table_path(&cache);
    if target.is_file() {
        return Ok(target);
    }
    let stage = crate::progress::Stage::start(&format!(
        "fetching the default background (wordfreq {VERSION}, PyPI; data CC BY-SA 4.0)"
    ));
    let (path, _) = fetch(&cache, &Sources::from_env()).await?;
    stage.finish(&path.display().to_string());
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pack(header: &[(&str, &str)], lists: &[&[&str]]) -> Vec<u8> {
        let mut out = Vec::new();
        rmp::encode::write_array_len(&mut out, lists.len() as u32 + 1).unwrap();
        rmp::encode::write_map_len(&mut out, header.len() as u32).unwrap();
        for (k, v) in header {
            rmp::encode::write_str(&mut out, k).unwrap();
            if *k == "version" {
                rmp::encode::write_uint(&mut out, v.parse().unwrap()).unwrap();
            } else {
                rmp::encode::write_str(&mut out, v).unwrap();
            }
        }
        for list in lists {
            rmp::encode::write_array_len(&mut out, list.len() as u32).unwrap();
            for w in *list {
                rmp::encode::write_str(&mut out, w).unwrap();
            }
        }
        out
    }

    #[test]
    fn cbpack_round_trip_and_bad_headers() {
        let header = [("format", "cB"), ("version", "1")];
        let bytes = pack(&header, &[&[], &["the"], &["levee", "don't"]]);
        let lists = decode_cbpack(&bytes).unwrap();
        assert_eq!(
            lists,
            vec![
                vec![],
                vec!["the".to_string()],
                vec!["levee".into(), "don't".into()]
            ]
        );
        let bad = pack(&[("format", "zz"), ("version", "1")], &[&["a"]]);
        assert!(decode_cbpack(&bad)
            .unwrap_err()
            .contains("expected \"cB\", 1"));
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert!(decode_cbpack(&trailing)
            .unwrap_err()
            .contains("after the last list"));
        assert!(decode_cbpack(&bytes[..bytes.len() - 2]).is_err());
    }

    #[test]
    fn frequent_words_are_in_every_document_rare_ones_in_few() {
        // List 0: frequency 1 (every token); list 500: 1e-5; list 700: 1e-7 (4000 · 4e-5 ≈ 0.16
        // documents: left out). "don't" is two tokens, each with the word's frequency.
        let mut lists: Vec<Vec<String>> = vec![Vec::new(); 701];
        lists[0].push("the".into());
        lists[500].push("levee".into());
        lists[500].push("don't".into());
        lists[700].push("zyzzyva".into());
        let table: BTreeMap<String, u32> = doc_freq(&lists).into_iter().collect();
        assert_eq!(table["the"], N_DOCS);
        // 4000 · (1 − e^(−0.004)) = 15.97
        assert_eq!(table["levee"], 16);
        assert_eq!(table["don"], 16);
        assert_eq!(table["t"], 16);
        assert!(!table.contains_key("zyzzyva"));
    }
}
