//! CSV articles: a header line, then one record a row, RFC 4180 quoting, each record's
//! quoting checked so that an unmatched quote is one bad row, not the rest of the file.

use super::cells::{Cell, FileRows, RawRow};
use super::columns::{column_names, required};
use super::config::Columns;
use super::error::{ArticlesError, RowError};

/// Reads a CSV file, returning its rows and its header (a header line, then one record a row; RFC 4180 quoting: a field in `"`
/// may hold commas and line breaks, a `"` inside it doubled).
///
/// An unmatched quote would make one field run on over every line up to the next `"` of the
/// file, swallowing the rows there without a word. So each record's quoting is checked
/// ([`quote_fault`]): a quoted field still open at the end of the file, or one whose closing
/// quote is followed by more text (the quote that "closed" it opened a later field), is a bad
/// row named by its first line and column, and reading goes on from the line after it, so the
/// rows it swallowed are read as rows. So is a record of another field count than the header's
/// that spans several lines.
pub(super) fn read_csv(
    file: &str,
    data: &[u8],
    columns: &Columns,
) -> Result<(FileRows, Vec<String>), ArticlesError> {
    let names = column_names(columns);
    let data = data.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(data);
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(data);
    let header = reader
        .byte_headers()
        .map_err(|e| ArticlesError::Unreadable {
            file: file.into(),
            reason: format!("CSV header: {e}"),
        })?
        .clone();
    let header: Vec<String> = header
        .iter()
        .map(|h| String::from_utf8_lossy(h).trim().to_string())
        .collect();
    required(file, &header, columns)?;
    let index: [Option<usize>; 6] =
        std::array::from_fn(|k| header.iter().position(|h| h == names[k]));
    let (mut rows, mut errors) = (Vec::new(), Vec::new());
    let bad = |line: usize, column: Option<String>, reason: String| RowError {
        file: file.into(),
        row: line,
        unit: "line",
        column,
        reason,
        record: None,
    };
    // The records after the header; after a bad record that spans lines, again from the line
    // after its first (`offset` in bytes, `lines_before` the lines above it).
    let (mut offset, mut lines_before) = (
        reader.position().byte() as usize,
        (reader.position().line() as usize).saturating_sub(1),
    );
    'from_line: loop {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(&data[offset..]);
        let mut record = csv::ByteRecord::new();
        loop {
            let before = reader.position().clone();
            let read = reader.read_byte_record(&mut record);
            let at = match &read {
                Ok(_) => record.position().cloned().unwrap_or(before),
                Err(e) => e.position().cloned().unwrap_or(before),
            };
            if matches!(read, Ok(false)) {
                break 'from_line;
            }
            let (mut line, mut start) = (lines_before + at.line() as usize, at.byte() as usize);
            let end = reader.position().byte() as usize;
            // The reader may place a record's start before the line break that ends the line
            // above (`\r\n` endings) or before blank lines: its first line is the one after.
            while start < end && matches!(data[offset + start], b'\r' | b'\n') {
                line += usize::from(data[offset + start] == b'\n');
                start += 1;
            }
            let raw = &data[offset + start..offset + end];
            let spanned = raw.trim_ascii_end().iter().filter(|&&b| b == b'\n').count() + 1;
            let fault = record_fault(&read, raw, record.len(), &header, spanned);
            if let Some((column, reason)) = fault {
                errors.push(bad(line, column, reason));
                if matches!(&read, Err(e) if matches!(e.kind(), csv::ErrorKind::Io(_))) {
                    break 'from_line;
                }
                if spanned > 1 {
                    // The lines it ran over are read again, as rows of their own.
                    let first_line_end = raw.iter().position(|&b| b == b'\n').unwrap_or(0);
                    offset += start + first_line_end + 1;
                    lines_before = line;
                    continue 'from_line;
                }
                continue;
            }
            let cells: RawRow = std::array::from_fn(|k| match index[k] {
                None => Cell::Null,
                Some(i) => match record.get(i) {
                    None => Cell::Null,
                    Some([]) => Cell::Null,
                    Some(b) => match std::str::from_utf8(b) {
                        Ok(s) => Cell::Str(s.to_string()),
                        Err(_) => Cell::BadUtf8,
                    },
                },
            });
            rows.push((line, cells));
        }
    }
    Ok(((rows, errors), header))
}

/// What is wrong with a record read as `read` from `raw` (its bytes; `fields` of them, over
/// `spanned` lines), if anything: the column at fault, when one is, and why.
fn record_fault(
    read: &Result<bool, csv::Error>,
    raw: &[u8],
    fields: usize,
    header: &[String],
    spanned: usize,
) -> Option<(Option<String>, String)> {
    match (read, quote_fault(raw)) {
        (_, Some((field, why))) => Some((header.get(field).cloned(), why.reason(spanned))),
        (Err(e), None) => Some((None, format!("not a CSV record: {e}"))),
        (Ok(_), None) if fields != header.len() => Some((
            None,
            format!(
                "not a CSV record: {fields} fields, the header has {}{}",
                header.len(),
                if spanned > 1 {
                    format!(" (it ran on over {spanned} lines: a quote opened in it closes only on a later line)")
                } else {
                    String::new()
                }
            ),
        )),
        (Ok(_), None) => None,
    }
}

/// How a record's quoting went wrong ([`quote_fault`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum QuoteFault {
    /// A quoted field still open at the end of the file.
    Unclosed,
    /// Text right after the quote that closes a field.
    TextAfterClose,
}

impl QuoteFault {
    fn reason(self, lines: usize) -> String {
        let ran = if lines > 1 {
            format!(" (it ran on over {lines} lines, reading the rows there as its text)")
        } else {
            String::new()
        };
        match self {
            QuoteFault::Unclosed => {
                format!("a quote opens this field and is never closed{ran}")
            }
            QuoteFault::TextAfterClose => {
                format!("an unmatched quote: text follows the quote that closes this field{ran}")
            }
        }
    }
}

/// Where the quoting of one CSV record (its raw bytes, as the csv reader took them: from its
/// first byte to the next record's) goes wrong, as the reader reads it (`,` between fields, a
/// field that starts with `"` quoted up to a `"` not doubled): the 0-based field and the fault.
/// `None` for a well-quoted record.
pub(super) fn quote_fault(raw: &[u8]) -> Option<(usize, QuoteFault)> {
    let (mut field, mut i) = (0, 0);
    loop {
        if raw.get(i) == Some(&b'"') {
            i += 1;
            loop {
                let Some(close) = raw[i..].iter().position(|&b| b == b'"') else {
                    return Some((field, QuoteFault::Unclosed));
                };
                i += close + 1;
                if raw.get(i) == Some(&b'"') {
                    i += 1;
                    continue;
                }
                break;
            }
            match raw.get(i) {
                None | Some(b'\r' | b'\n') => return None,
                Some(b',') => {}
                Some(_) => return Some((field, QuoteFault::TextAfterClose)),
            }
        } else {
            let end = i + raw[i..]
                .iter()
                .position(|&b| matches!(b, b',' | b'\r' | b'\n'))?;
            if raw[end] != b',' {
                return None;
            }
            i = end;
        }
        i += 1;
        field += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_faults() {
        let ok: [&[u8]; 6] = [
            b"a,b,c\n",
            b"a,\"b, with a comma\",c\n",
            b"\"a\nb\",\"say \"\"hi\"\"\"\r\n",
            b"a,5\" screen,c\n",
            b"a,\"\"\n",
            b"a,\"b\"",
        ];
        for raw in ok {
            assert_eq!(quote_fault(raw), None, "{}", String::from_utf8_lossy(raw));
        }
        assert_eq!(
            quote_fault(b"a,\"never closed\nx,y,z\n"),
            Some((1, QuoteFault::Unclosed))
        );
        assert_eq!(
            quote_fault(b"a,b,\"opened\nx,y,\"next\"\n"),
            Some((2, QuoteFault::TextAfterClose))
        );
        assert_eq!(
            quote_fault(b"\"a\"b,c\n"),
            Some((0, QuoteFault::TextAfterClose))
        );
    }
}
