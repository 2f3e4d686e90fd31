//! What an import says when it is done: the columns read, the optional ones absent and what
//! each costs, and the per-event counts as a table.

use super::{ArticleSummary, ArticlesImport};

/// One line per optional column absent from the input: what it costs and how to name it.
pub fn format_absent(result: &ArticlesImport) -> String {
    let mut out = String::new();
    for (a, files) in &result.absent {
        let which = if files.len() == result.files {
            if files.len() == 1 {
                files[0].clone()
            } else {
                "every file".to_string()
            }
        } else {
            format!(
                "{} of {} files (e.g. {})",
                files.len(),
                result.files,
                files[0]
            )
        };
        let guess = match &a.guess {
            Some(g) => format!(" — `{g}` looks like it: {} {g}", a.flag()),
            None => String::new(),
        };
        out.push_str(&format!(
            "no column `{}` in {which}, so {} (name the column with {} or {} = … in [import.columns]{guess})\n",
            a.column,
            a.cost(),
            a.flag(),
            a.field,
        ));
    }
    out
}

/// The columns read, the optional ones absent, then the per-event counts as a readable table.
pub fn format_summary(result: &ArticlesImport) -> String {
    let read: Vec<String> = result
        .read
        .iter()
        .map(|(f, c)| format!("{f} = `{c}`"))
        .collect();
    let mut out = format!("columns read: {}\n", read.join(", "));
    out.push_str(&format_absent(result));
    // `boilerplate`: boilerplate lines dropped; `copies`: copies of shared news paragraphs
    // dropped (each kept once); `empty`: articles with nothing left after both (not counted in
    // `articles`).
    out.push_str(&format!(
        "{:<32} {:>8} {:>8} {:>10} {:>11} {:>6} {:>6} {:>8}\n",
        "key_event",
        "articles",
        "segments",
        "duplicates",
        "boilerplate",
        "copies",
        "empty",
        "rejected"
    ));
    for e in &result.events {
        out.push_str(&format!(
            "{:<32} {:>8} {:>8} {:>10} {:>11} {:>6} {:>6} {:>8}\n",
            e.key_event,
            e.articles,
            e.segments,
            e.duplicates,
            e.boilerplate,
            e.copies,
            e.empty,
            e.rejected
        ));
    }
    let total = |f: fn(&ArticleSummary) -> usize| result.events.iter().map(f).sum::<usize>();
    if total(|e| e.already) > 0 {
        out.push_str(&format!(
            "{} articles already in the corpus (their id, in their key event) left out\n",
            total(|e| e.already)
        ));
    }
    out.push_str(&format!(
        "{} rows in {} file(s): {} events, {} articles, {} segments; {} duplicate articles dropped, {} boilerplate lines dropped ({} distinct), {} copies of shared paragraphs dropped ({} distinct, each kept once), {} articles empty after both ({} of them copies of earlier articles, {} kept as carriers of the copy in copies.parquet), {} rows rejected\n",
        result.rows,
        result.files,
        result.events.len(),
        total(|e| e.articles),
        total(|e| e.segments),
        total(|e| e.duplicates),
        total(|e| e.boilerplate),
        result.boilerplate.iter().filter(|b| b.kind == "furniture").count(),
        total(|e| e.copies),
        result.boilerplate.iter().filter(|b| b.kind == "copy").count(),
        total(|e| e.empty),
        total(|e| e.copied),
        total(|e| e.carriers),
        result.rejected.len()
    ));
    out
}
