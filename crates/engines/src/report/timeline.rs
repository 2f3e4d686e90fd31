//! An event's timeline: inline SVG, one row for the corpus and one per episode, a mark per day.

use std::fmt::Write as _;

use super::format::{clip, episode_heading, escape, iso_day, num};
use super::view::EventView;

/// The timeline's geometry, in SVG units.
const WIDTH: f64 = 1000.0;
const LABEL: f64 = 220.0;
const ROW: f64 = 18.0;
const BAR: f64 = 15.0;

/// Where the days go: the first and last day, a day's step and a bar's width.
struct Scale {
    first: i32,
    last: i32,
    step: f64,
    bar_w: f64,
}

impl Scale {
    /// The left edge of day `d`'s bar.
    fn x(&self, d: i32) -> f64 {
        LABEL + (d - self.first) as f64 * self.step + (self.step - self.bar_w) / 2.0
    }
}

/// Writes the event's timeline (or a note that there is none: no dated segment).
pub(super) fn timeline(out: &mut String, ev: &EventView) {
    let first = ev
        .corpus_days
        .keys()
        .next()
        .into_iter()
        .chain(ev.episodes.iter().filter_map(|e| e.days.keys().next()))
        .min()
        .copied();
    let last = ev
        .corpus_days
        .keys()
        .next_back()
        .into_iter()
        .chain(ev.episodes.iter().filter_map(|e| e.days.keys().next_back()))
        .max()
        .copied();
    let (Some(first), Some(last)) = (first, last) else {
        out.push_str("<p class=\"muted\">No dated segments: no timeline.</p>\n");
        return;
    };
    let n_days = (last - first + 1) as f64;
    let plot = WIDTH - LABEL - 10.0;
    let step = plot / n_days;
    let scale = Scale {
        first,
        last,
        step,
        bar_w: (step * 0.85).max(1.0),
    };
    let rows = ev.episodes.len() + 1;
    let height = ROW * rows as f64 + 22.0;
    let _ = writeln!(
        out,
        "<svg class=\"timeline\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"segments per day per episode\">",
        num(WIDTH),
        num(height),
        num(WIDTH),
        num(height)
    );
    bars(out, ev, &scale);
    axis(out, &scale, ROW * rows as f64 + 2.0);
    out.push_str("</svg>\n");
}

/// The corpus row (every segment of the event per day), then a row per episode.
fn bars(out: &mut String, ev: &EventView, scale: &Scale) {
    let bar_w = scale.bar_w;
    let max_c = ev.corpus_days.values().copied().max().unwrap_or(1).max(1) as f64;
    let max_e = ev
        .episodes
        .iter()
        .flat_map(|e| e.days.values())
        .copied()
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let _ = writeln!(
        out,
        "<text x=\"0\" y=\"{}\">all segments</text>",
        num(ROW - 5.0)
    );
    for (&d, &n) in ev.corpus_days {
        let h = (BAR * n as f64 / max_c).max(1.0);
        let _ = write!(
            out,
            "<rect class=\"c\" data-day=\"{}\" data-count=\"{n}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
            iso_day(d),
            num(scale.x(d)),
            num(ROW - 2.0 - h),
            num(bar_w),
            num(h)
        );
    }
    out.push('\n');
    for (i, e) in ev.episodes.iter().enumerate() {
        let base = ROW * (i + 2) as f64 - 2.0;
        let _ = writeln!(
            out,
            "<text x=\"0\" y=\"{}\">{} · {}</text>",
            num(base - 3.0),
            // The number the episode's card shows: its id across runs where it has one.
            e.episode
                .stable_id
                .map_or_else(|| e.episode.episode_id.to_string(), |s| format!("#{s}")),
            escape(&clip(&episode_heading(e.episode), 30))
        );
        let id = e.episode.episode_id;
        for (&d, &n) in &e.days {
            let h = (BAR * n as f64 / max_e).max(1.5);
            let _ = write!(
                out,
                "<rect class=\"m\" data-episode=\"{id}\" data-day=\"{}\" data-count=\"{n}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
                iso_day(d),
                num(scale.x(d)),
                num(base - h),
                num(bar_w),
                num(h)
            );
        }
        out.push('\n');
    }
}

/// The date axis at `axis_y`: the first and last day, and the middle one when there is room.
fn axis(out: &mut String, scale: &Scale, axis_y: f64) {
    let (first, last) = (scale.first, scale.last);
    let _ = writeln!(
        out,
        "<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
        num(LABEL),
        num(axis_y),
        num(WIDTH - 10.0),
        num(axis_y)
    );
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\">{}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
        num(LABEL),
        num(axis_y + 14.0),
        iso_day(first),
        num(WIDTH - 10.0),
        num(axis_y + 14.0),
        iso_day(last)
    );
    if last - first >= 4 {
        let mid = first + (last - first) / 2;
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            num(scale.x(mid) + scale.bar_w / 2.0),
            num(axis_y + 14.0),
            iso_day(mid)
        );
    }
}
