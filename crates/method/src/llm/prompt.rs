//! The episode-estimation prompt of the paper (appendix H) and the parsing and validation of
//! its answers (docs/method.md §5).

use serde_json::Value;

/// The title's five fields, in the order the prompt asks for them.
pub const TITLE_FIELDS: [&str; 5] = ["subject", "action", "object", "time", "location"];

/// One episode as the LLM describes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LlmEpisode {
    /// [subject, action, object, time, location].
    pub title: Vec<String>,
    /// 5–10 keywords.
    pub keywords: Vec<String>,
    /// 2–5 sentences taken from the input.
    pub example_sentences: Vec<String>,
}

/// The user message for one key event: its candidate clusters' top segments as numbered groups,
/// then the task of appendix H with `k` = the number of clusters (at least 2).
pub fn build_prompt(groups: &[Vec<&str>]) -> String {
    let k = max_episodes(groups.len());
    let mut out = String::new();
    for (i, group) in groups.iter().enumerate() {
        out.push_str(&format!("Group {}:\n", i + 1));
        for text in group {
            out.push_str("- ");
            out.push_str(&text.split_whitespace().collect::<Vec<_>>().join(" "));
            out.push('\n');
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "Task: You are a key news event analyzer that is aiming to detect episodes (a \
representative subevent that reflects a critical sequence of actions performed by a subject at a \
certain and/or location) based on text segments from different news articles. Given the above \
groups of article segments, predict at least 2 and at most {k} potential episodes of the key \
event. Some groups may fall under the same episode. Output your answer inside the tags \
<answer></answer> as a JSON object where each item is also a JSON with the key \"title\" with the \
value containing the [subject, action, object, time, location] of the episode, a key \"keywords\" \
with the string value being a list of 5-10 associated keywords unique to that specific episode, \
and a final key \"example_sentences\" with a value being a list of 2-5 extracted sentences from \
the input segment groups. Feel free to output less than {k} episodes if you feel that any are \
redundant (could fit under an existing candidate episode). The title, keywords, and example \
sentences of a predicted episode should not be able to be placed under another different \
predicted episode."
    ));
    out
}

/// Characters per token assumed when a prompt's length is checked against a context window: a
/// cautious figure for English under BPE tokenizers (most give about 4).
pub const CHARS_PER_TOKEN: usize = 3;

/// The most segments per cluster (at most `wanted`, at least 1) whose prompt, at
/// [`CHARS_PER_TOKEN`], leaves `answer_tokens` free in a window of `context_tokens`.
pub fn segments_that_fit(
    groups: &[Vec<&str>],
    wanted: usize,
    context_tokens: usize,
    answer_tokens: usize,
) -> usize {
    let mut n = wanted.max(1);
    while n > 1 {
        let cut: Vec<Vec<&str>> = groups
            .iter()
            .map(|g| g.iter().take(n).copied().collect())
            .collect();
        let tokens = build_prompt(&cut).len().div_ceil(CHARS_PER_TOKEN);
        if tokens + answer_tokens <= context_tokens {
            break;
        }
        n -= 1;
    }
    n
}

/// The JSON Schema of an answer with at most `max` episodes (the counts the prompt states), for
/// the servers' structured output: OpenAI-style `response_format` (a grammar in llama.cpp's
/// server, guided decoding in vLLM) and Anthropic's forced tool call. [`parse_answer`] reads it.
pub fn answer_schema(max: usize) -> Value {
    let strings = |min: usize, max: usize| {
        serde_json::json!({
            "type": "array",
            "items": {"type": "string"},
            "minItems": min,
            "maxItems": max,
        })
    };
    serde_json::json!({
        "type": "object",
        "properties": {
            "episodes": {
                "type": "array",
                "minItems": 2,
                "maxItems": max.max(2),
                "items": {
                    "type": "object",
                    "properties": {
                        "title": strings(5, 5),
                        "keywords": strings(5, 10),
                        "example_sentences": strings(2, 5),
                    },
                    "required": ["title", "keywords", "example_sentences"],
                    "additionalProperties": false,
                },
            },
        },
        "required": ["episodes"],
        "additionalProperties": false,
    })
}

/// The most episodes an answer may hold for `clusters` candidate clusters (the prompt's k).
pub fn max_episodes(clusters: usize) -> usize {
    clusters.max(2)
}

/// The message sent back after an invalid answer.
pub fn repair_note(problem: &str) -> String {
    format!(
        "Your answer could not be used: {problem}. Answer again with the whole answer inside \
<answer></answer>: a JSON list of episodes, each with \"title\" (a list of exactly five strings: \
subject, action, object, time, location), \"keywords\" (a list of 5-10 strings) and \
\"example_sentences\" (a list of 2-5 sentences from the input groups)."
    )
}

/// The JSON text of an answer: inside the last non-empty `<answer>…</answer>` (a model may echo
/// the prompt's empty template after or before its answer), else the last fenced code block
/// (```json … ```), else the whole text outside empty answer tags.
pub fn extract_json(text: &str) -> &str {
    let mut end = text.len();
    while let Some(start) = text[..end].rfind("<answer>") {
        let rest = &text[start + "<answer>".len()..];
        let inner = rest.find("</answer>").map_or(rest, |e| &rest[..e]);
        let inner = strip_fence(inner.trim());
        if !inner.is_empty() {
            return inner;
        }
        end = start;
    }
    if let Some(block) = last_fenced_block(text) {
        return block.trim();
    }
    let trimmed = text.trim();
    if end == text.len() {
        return trimmed;
    }
    // Only empty answer tags: JSON outside them, if any.
    let outside = trimmed
        .strip_suffix("<answer></answer>")
        .or_else(|| trimmed.strip_prefix("<answer></answer>"))
        .map_or(trimmed, str::trim);
    match outside.find(['[', '{']) {
        Some(start) => &outside[start..],
        None => "",
    }
}

fn strip_fence(text: &str) -> &str {
    last_fenced_block(text).map_or(text, str::trim)
}

fn last_fenced_block(text: &str) -> Option<&str> {
    let open = text.rfind("```")?;
    let before = &text[..open];
    let start = before.rfind("```")?;
    let body = &text[start + 3..open];
    // Drop the info string (`json`) on the opening line.
    let body = match body.find('\n') {
        Some(nl) if !body[..nl].trim_start().starts_with(['{', '[']) => &body[nl + 1..],
        _ => body,
    };
    Some(body)
}

/// Parses and validates an answer: 2..=`max` episodes, each with a five-field title, 5–10
/// keywords and 2–5 example sentences. The error says what is wrong, for the repair note.
pub fn parse_answer(text: &str, max: usize) -> Result<Vec<LlmEpisode>, String> {
    let json = extract_json(text);
    if json.is_empty() {
        return Err(if text.contains("<answer>") {
            "its <answer></answer> tags are empty (an echo of the prompt's template?) and no JSON \
             is anywhere else"
                .into()
        } else {
            "the answer is empty".into()
        });
    }
    let value: Value = serde_json::from_str(json)
        .or_else(|e| {
            // Many models write raw line breaks or tabs inside JSON strings; read those as
            // escaped (anything else that is not JSON stays an error).
            let escaped = escape_controls_in_strings(json);
            if escaped == json {
                Err(e)
            } else {
                // What is wrong once the line breaks are read as escaped.
                serde_json::from_str(&escaped)
            }
        })
        .map_err(|e| format!("the answer is not valid JSON ({e})"))?;
    let items: Vec<&Value> = match &value {
        Value::Array(items) => items.iter().collect(),
        Value::Object(map) => match map.get("episodes") {
            Some(Value::Array(items)) if map.len() == 1 => items.iter().collect(),
            _ if map.contains_key("title") => vec![&value],
            _ => map.values().collect(),
        },
        _ => return Err("the answer is neither a JSON list nor a JSON object".into()),
    };
    if items.len() < 2 || items.len() > max {
        return Err(format!(
            "it has {} episodes; give at least 2 and at most {max}",
            items.len()
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| parse_episode(item).map_err(|e| format!("episode {}: {e}", i + 1)))
        .collect()
}

/// `json` with every control character inside a string literal escaped (`\n`, `\t`, `\u00XX`),
/// so that a model's raw line break inside a string does not make the whole answer unreadable.
fn escape_controls_in_strings(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            } else if (c as u32) < 0x20 {
                match c {
                    '\n' => out.push_str("\\n"),
                    '\t' => out.push_str("\\t"),
                    '\r' => out.push_str("\\r"),
                    _ => out.push_str(&format!("\\u{:04x}", c as u32)),
                }
                continue;
            }
        } else if c == '"' {
            in_string = true;
        }
        out.push(c);
    }
    out
}

fn parse_episode(item: &Value) -> Result<LlmEpisode, String> {
    let Value::Object(map) = item else {
        return Err("not a JSON object".into());
    };
    let title = match map.get("title") {
        Some(Value::Object(fields)) => TITLE_FIELDS
            .iter()
            .map(|f| match fields.get(*f) {
                Some(v) => scalar(v).ok_or_else(|| format!("title field `{f}` is not a string")),
                None => Err(format!("title has no `{f}`")),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(v) => strings(v).ok_or("`title` is not a list of strings")?,
        None => return Err("no `title`".into()),
    };
    if title.len() != 5 {
        return Err(format!(
            "`title` has {} fields; it needs exactly five: subject, action, object, time, location",
            title.len()
        ));
    }
    let mut keywords = strings(map.get("keywords").ok_or("no `keywords`")?)
        .ok_or("`keywords` is not a list of strings")?;
    // The paper's own example gives one comma-separated string.
    if keywords.len() == 1 && keywords[0].contains(',') {
        keywords = keywords[0]
            .split(',')
            .map(|k| k.trim().to_string())
            .collect();
    }
    keywords.retain(|k| !k.is_empty());
    if !(5..=10).contains(&keywords.len()) {
        return Err(format!("{} keywords; give 5 to 10", keywords.len()));
    }
    let mut examples = strings(
        map.get("example_sentences")
            .ok_or("no `example_sentences`")?,
    )
    .ok_or("`example_sentences` is not a list of strings")?;
    examples.retain(|e| !e.is_empty());
    if !(2..=5).contains(&examples.len()) {
        return Err(format!("{} example sentences; give 2 to 5", examples.len()));
    }
    Ok(LlmEpisode {
        title,
        keywords,
        example_sentences: examples,
    })
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Null => Some(String::new()),
        _ => None,
    }
}

/// A list of strings, or one string (taken as a one-item list).
fn strings(v: &Value) -> Option<Vec<String>> {
    match v {
        Value::Array(items) => items.iter().map(scalar).collect(),
        Value::String(s) => Some(vec![s.trim().to_string()]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"[
      {"title": ["Protesters", "storm", "the legislature", "July 1, 2019", "Hong Kong"],
       "keywords": ["storm", "legislature", "vandalism", "graffiti", "chamber"],
       "example_sentences": ["Protesters broke in.", "Slogans were sprayed."]},
      {"title": ["Police", "fire", "tear gas", "July 2, 2019", "Admiralty"],
       "keywords": "tear gas, police, dispersal, rubber bullets, clearance",
       "example_sentences": ["Police fired tear gas.", "The crowd dispersed."]}
    ]"#;

    #[test]
    fn prompts_are_cut_to_the_context_window() {
        let long = "word ".repeat(60);
        let groups: Vec<Vec<&str>> = (0..4).map(|_| vec![long.as_str(); 5]).collect();
        let full = build_prompt(&groups).len().div_ceil(CHARS_PER_TOKEN);
        assert_eq!(segments_that_fit(&groups, 5, full + 100, 100), 5);
        let n = segments_that_fit(&groups, 5, full / 2 + 100, 100);
        assert!((1..5).contains(&n), "{n}");
        let cut: Vec<Vec<&str>> = groups.iter().map(|g| g[..n].to_vec()).collect();
        assert!(build_prompt(&cut).len().div_ceil(CHARS_PER_TOKEN) + 100 <= full / 2 + 100);
        // Never below one segment per cluster.
        assert_eq!(segments_that_fit(&groups, 5, 10, 100), 1);
    }

    #[test]
    fn prompt_lists_groups_and_k() {
        let p = build_prompt(&[vec!["a  b\nc", "d"], vec!["e"], vec!["f"]]);
        assert!(p.starts_with("Group 1:\n- a b c\n- d\n\nGroup 2:\n- e\n\nGroup 3:\n- f\n\nTask:"));
        assert!(p.contains("at least 2 and at most 3 potential episodes"));
        assert!(p.contains("output less than 3 episodes"));
        // One cluster still asks for at least 2 and at most 2.
        assert!(build_prompt(&[vec!["x"]]).contains("at most 2 potential"));
    }

    #[test]
    fn answers_in_tags_fences_and_shapes() {
        let tagged = format!("Some thoughts.\n<answer>\n{GOOD}\n</answer>\nDone.");
        let eps = parse_answer(&tagged, 3).unwrap();
        assert_eq!(eps.len(), 2);
        assert_eq!(eps[0].title[1], "storm");
        // A comma-separated keyword string is split.
        assert_eq!(eps[1].keywords.len(), 5);
        assert_eq!(eps[1].keywords[0], "tear gas");
        let fenced = format!("Here:\n```json\n{GOOD}\n```\n");
        assert_eq!(parse_answer(&fenced, 3).unwrap(), eps);
        let in_tags_fenced = format!("<answer>```json\n{GOOD}\n```</answer>");
        assert_eq!(parse_answer(&in_tags_fenced, 3).unwrap(), eps);
        // An object of episodes, and {"episodes": [...]}, and titles as objects.
        let object = r#"{"1": {"title": {"subject": "A", "action": "b", "object": "c", "time": "d", "location": "e"},
            "keywords": ["k1","k2","k3","k4","k5"], "example_sentences": ["s1", "s2"]},
            "2": {"title": ["F","g","h","i","j"], "keywords": ["k1","k2","k3","k4","k5","k6"],
            "example_sentences": ["s3", "s4", "s5"]}}"#;
        let eps = parse_answer(object, 2).unwrap();
        assert_eq!(eps[0].title, ["A", "b", "c", "d", "e"]);
        assert_eq!(eps[1].example_sentences.len(), 3);
        let wrapped = format!("{{\"episodes\": {GOOD}}}");
        assert_eq!(parse_answer(&wrapped, 2).unwrap().len(), 2);
        // The schema's shape is what parse_answer reads, and the schema states the counts.
        let schema = answer_schema(4);
        assert_eq!(schema["properties"]["episodes"]["maxItems"], 4);
        assert_eq!(
            schema["properties"]["episodes"]["items"]["properties"]["title"]["minItems"],
            5
        );
        assert_eq!(
            schema["properties"]["episodes"]["items"]["required"],
            serde_json::json!(["title", "keywords", "example_sentences"])
        );
        // The prompt's empty template echoed after, or before, the answer.
        let echo_after = format!("<answer>\n{GOOD}\n</answer>\n<answer></answer>");
        assert_eq!(parse_answer(&echo_after, 3).unwrap(), eps_of_good());
        let echo_then_json = format!("<answer></answer>\n{GOOD}");
        assert_eq!(parse_answer(&echo_then_json, 3).unwrap(), eps_of_good());
    }

    fn eps_of_good() -> Vec<LlmEpisode> {
        parse_answer(GOOD, 3).unwrap()
    }

    #[test]
    fn invalid_answers_say_what_is_wrong() {
        let err = |t: &str, max| parse_answer(t, max).unwrap_err();
        assert!(err("<answer>[{\"title\": </answer>", 3).contains("not valid JSON"));
        assert!(err(GOOD, 1).contains("2 episodes; give at least 2 and at most 1"));
        let one = r#"[{"title": ["a","b","c","d","e"], "keywords": ["1","2","3","4","5"], "example_sentences": ["x","y"]}]"#;
        assert!(err(one, 3).contains("1 episodes"));
        let short_title = GOOD.replace(r#""Police", "fire", "#, "");
        assert!(err(&short_title, 3).starts_with("episode 2: `title` has 3 fields"));
        let few_keywords = GOOD.replace(r#""graffiti", "chamber""#, r#""graffiti""#);
        assert!(err(&few_keywords, 3).starts_with("episode 1: 4 keywords"));
        let one_example = GOOD.replace(r#", "The crowd dispersed.""#, "");
        assert!(err(&one_example, 3).starts_with("episode 2: 1 example sentences"));
        assert!(err("", 3).contains("empty"));
        assert!(err("Sure! <answer></answer>", 3).contains("tags are empty"));
        // Raw line breaks and tabs inside strings are read as escaped; outside strings they
        // are whitespace anyway; broken JSON stays an error.
        let raw = GOOD.replace("Protesters broke in.", "Protesters\nbroke\tin.");
        let eps = parse_answer(&raw, 3).unwrap();
        assert_eq!(eps[0].example_sentences[0], "Protesters\nbroke\tin.");
        assert!(err("[{\"title\": \"a\nb", 3).contains("not valid JSON"));
        // Broken apart from its line breaks: the error is what is wrong once they are escaped.
        let broken = err("[{\"title\": [\"a\nb\", ' . }]", 3);
        assert!(
            broken.contains("not valid JSON") && !broken.contains("control character"),
            "{broken}"
        );
        assert!(err("42", 3).contains("neither"));
        assert!(repair_note("x").contains("<answer></answer>"));
    }
}
