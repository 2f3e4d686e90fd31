//! How an error reads: one line, each cause said once. What the binary prints after `error: `,
//! and the message of the Python package's exceptions.

/// An error and its causes as one line, each cause said once: the library's errors already
/// name their cause in their own text (with the cause a user can act on first), so a source
/// whose text is already in the line is left out, as are empty ones.
pub fn one_line(e: &(dyn std::error::Error + 'static)) -> String {
    let mut line = String::new();
    let mut cause = Some(e);
    while let Some(e) = cause {
        let text = e.to_string();
        let text = text.trim().trim_end_matches(':').trim_end();
        if !text.is_empty() && !line.contains(text) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(text);
        }
        cause = e.source();
    }
    line
}

/// `text` with its control characters but newlines and tabs written as escapes (`\x1b`,
/// `\u{9b}`), so that a file name or a CSV header holding ESC or BEL cannot ring the terminal
/// or drive it: what the binary prints of names and errors goes through here.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !unsafe_char(c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn control_characters_are_escaped_and_text_is_not() {
        assert_eq!(super::printable("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(
            super::printable("col\u{1b}[31mred\u{7}\u{9b}"),
            "col\\x1b[31mred\\x07\\u{9b}"
        );
    }
}
