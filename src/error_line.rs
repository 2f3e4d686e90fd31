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
