//! Slurm's compressed host lists (`gpu[01-03,07],cpu5`) and task counts per node
//! (`2(x3),1`), expanded as `scontrol show hostnames` expands them: the bracket groups of one
//! name multiply out left to right, a range keeps the width of its first bound (`[08-10]`:
//! `08 09 10`), and top-level commas separate names.

/// A host list or task count that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} `{text}`: {reason}")]
pub struct NodeListError {
    /// Which variable or setting held it.
    pub what: String,
    /// The text.
    pub text: String,
    /// Why it does not parse.
    pub reason: String,
}

/// The most hosts a list may expand to (a typo like `n[0-99999999]` is an error, not an
/// allocation of gigabytes).
pub const MAX_HOSTS: usize = 100_000;

/// Expands a Slurm host list (`SLURM_STEP_NODELIST`, `SLURM_JOB_NODELIST`) into host names,
/// in Slurm's order. `what` names the list in errors.
pub fn expand(text: &str, what: &str) -> Result<Vec<String>, NodeListError> {
    let err = |reason: String| NodeListError {
        what: what.to_string(),
        text: text.to_string(),
        reason,
    };
    let mut hosts = Vec::new();
    for name in split_top_level(text).map_err(&err)? {
        let name = name.trim();
        if name.is_empty() {
            return Err(err("an empty host name".into()));
        }
        let expanded = expand_name(name, MAX_HOSTS - hosts.len()).map_err(&err)?;
        hosts.extend(expanded);
    }
    if hosts.is_empty() {
        return Err(err("no hosts".into()));
    }
    Ok(hosts)
}

/// Splits at the commas outside brackets; checks that brackets pair up.
fn split_top_level(text: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '[' if depth > 0 => return Err(format!("a `[` inside brackets at byte {i}")),
            '[' => depth = 1,
            ']' if depth == 0 => return Err(format!("a `]` without its `[` at byte {i}")),
            ']' => depth = 0,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth > 0 {
        return Err("a `[` that is never closed".into());
    }
    parts.push(&text[start..]);
    Ok(parts)
}

/// One name with any number of bracket groups, multiplied out left to right.
fn expand_name(name: &str, room: usize) -> Result<Vec<String>, String> {
    let mut out = vec![String::new()];
    let mut rest = name;
    while let Some(open) = rest.find('[') {
        let close = open + rest[open..].find(']').ok_or("a `[` that is never closed")?;
        let literal = &rest[..open];
        let items = ranges(&rest[open + 1..close])?;
        if out.len().saturating_mul(items.len()) > room {
            return Err(format!("more than {MAX_HOSTS} hosts"));
        }
        out = out
            .iter()
            .flat_map(|prefix| items.iter().map(move |i| format!("{prefix}{literal}{i}")))
            .collect();
        rest = &rest[close + 1..];
    }
    for host in &mut out {
        host.push_str(rest);
    }
    Ok(out)
}

/// The inside of one bracket group: `01-03,07` → `01 02 03 07`.
fn ranges(inside: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for item in inside.split(',') {
        let item = item.trim();
        let (lo, hi) = item.split_once('-').unwrap_or((item, item));
        let number = |s: &str| -> Result<u64, String> {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || s.len() > 18 {
                return Err(format!(
                    "`[{inside}]`: `{item}` is not a number or a range N-M"
                ));
            }
            s.parse().map_err(|e| format!("`{s}`: {e}"))
        };
        let (a, b) = (number(lo)?, number(hi)?);
        if a > b {
            return Err(format!("`[{inside}]`: the range `{item}` runs backwards"));
        }
        if (b - a) as usize >= MAX_HOSTS {
            return Err(format!("more than {MAX_HOSTS} hosts"));
        }
        let width = lo.len();
        out.extend((a..=b).map(|n| format!("{n:0width$}")));
    }
    Ok(out)
}

/// Expands Slurm's tasks per node (`SLURM_STEP_TASKS_PER_NODE`: `2(x3),1` → `2 2 2 1`).
pub fn tasks_per_node(text: &str, what: &str) -> Result<Vec<usize>, NodeListError> {
    let err = |reason: String| NodeListError {
        what: what.to_string(),
        text: text.to_string(),
        reason,
    };
    let mut out = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        let (count, times) = match item.split_once("(x") {
            Some((count, times)) => {
                let times = times
                    .strip_suffix(')')
                    .ok_or_else(|| err(format!("`{item}` is not N or N(xM)")))?;
                (count, times)
            }
            None => (item, "1"),
        };
        let parse = |s: &str| {
            s.parse::<usize>()
                .map_err(|_| err(format!("`{item}` is not N or N(xM)")))
        };
        let (count, times) = (parse(count)?, parse(times)?);
        if out.len() + times > MAX_HOSTS {
            return Err(err(format!("more than {MAX_HOSTS} nodes")));
        }
        out.extend(std::iter::repeat_n(count, times));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(text: &str) -> Vec<String> {
        expand(text, "list").unwrap()
    }

    #[test]
    fn expands_like_scontrol() {
        assert_eq!(
            hosts("gpu[01-03,07],cpu5"),
            ["gpu01", "gpu02", "gpu03", "gpu07", "cpu5"]
        );
        assert_eq!(hosts("localhost"), ["localhost"]);
        assert_eq!(hosts("n[8-10]"), ["n8", "n9", "n10"]);
        assert_eq!(hosts("n[08-10]"), ["n08", "n09", "n10"]);
        assert_eq!(
            hosts("rack[1-2]-n[1-2].x"),
            ["rack1-n1.x", "rack1-n2.x", "rack2-n1.x", "rack2-n2.x"]
        );
        assert_eq!(hosts("a[3],b"), ["a3", "b"]);
        assert_eq!(hosts("node-1,node-2"), ["node-1", "node-2"]);
    }

    #[test]
    fn bad_lists_are_errors_naming_the_text() {
        for bad in [
            "",
            "gpu[01-03",
            "gpu01]",
            "gpu[a-b]",
            "gpu[3-1]",
            "a,,b",
            "gpu[]",
            "gpu[[1]]",
            "n[0-99999999]",
            "n[0-999]x[0-999]",
        ] {
            let e = expand(bad, "SLURM_STEP_NODELIST").unwrap_err().to_string();
            assert!(e.starts_with("SLURM_STEP_NODELIST `"), "{bad}: {e}");
        }
    }

    #[test]
    fn tasks_per_node_expand() {
        assert_eq!(tasks_per_node("2(x3),1", "t").unwrap(), [2, 2, 2, 1]);
        assert_eq!(tasks_per_node("4", "t").unwrap(), [4]);
        for bad in ["", "2(x", "x3", "2(x3", "-1"] {
            assert!(tasks_per_node(bad, "t").is_err(), "{bad}");
        }
    }
}
