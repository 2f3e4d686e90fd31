//! How long the LLM client waits before a retry: the backoff, and the bound on one event's
//! waits (`llm.event_retry_wait`).

use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The first delay between retries; it doubles each attempt (with jitter), up to [`MAX_DELAY`].
pub(super) const BASE_DELAY: Duration = Duration::from_millis(250);
/// The longest wait between two attempts of the backoff (a server's `retry-after` may ask for
/// more, up to `llm.max_retry_wait`).
pub(super) const MAX_DELAY: Duration = Duration::from_secs(30);

/// The waits before retries of one event's requests (all its trials), against
/// `llm.event_retry_wait`; it names the event in the log line of each wait.
#[derive(Debug)]
pub struct EventWaits {
    pub(super) event: String,
    limit: Duration,
    waited: std::sync::Mutex<Duration>,
}

impl EventWaits {
    /// No wait yet for `event`, at most `limit` seconds in all.
    pub fn new(event: &str, limit: f64) -> Self {
        Self {
            event: event.to_string(),
            limit: Duration::from_secs_f64(limit.max(0.0)),
            waited: Default::default(),
        }
    }

    /// Counts `wait` when it fits the bound; otherwise returns what was waited so far.
    pub(super) fn take(&self, wait: Duration) -> Result<(), Duration> {
        let mut waited = self.waited.lock().expect("waits");
        if *waited + wait > self.limit {
            return Err(*waited);
        }
        *waited += wait;
        Ok(())
    }

    /// Seconds waited so far.
    pub fn waited(&self) -> f64 {
        self.waited.lock().expect("waits").as_secs_f64()
    }
}

/// Exponential backoff from [`BASE_DELAY`], with jitter in [½, 1) taken from a hash of the
/// request and attempt (so it spreads events apart without a random source).
pub(super) fn backoff(attempt: u32, body: &Value, trial: u32) -> Duration {
    let exp = BASE_DELAY.saturating_mul(1u32 << attempt.min(16));
    let mut h = Sha256::new();
    h.update(body.to_string().as_bytes());
    h.update(trial.to_le_bytes());
    h.update(attempt.to_le_bytes());
    let bits = u64::from_le_bytes(h.finalize()[..8].try_into().expect("8 bytes"));
    let jitter = 0.5 + (bits >> 11) as f64 / (1u64 << 53) as f64 / 2.0;
    exp.min(MAX_DELAY).mul_f64(jitter)
}

/// The wait a `retry-after` header asks for: seconds, or an HTTP date (RFC 2822 form, as
/// `Wed, 21 Oct 2015 07:28:00 GMT`; a date past is no wait). `None` for anything else.
pub(super) fn retry_after(header: &str) -> Option<Duration> {
    if let Ok(secs) = header.parse::<f64>() {
        // Capped only so that it is a Duration; `llm.max_retry_wait` cuts it.
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e9)));
    }
    let at = chrono::DateTime::parse_from_rfc2822(header).ok()?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_secs_f64();
    Some(Duration::from_secs_f64(
        (at.timestamp() as f64 - now).clamp(0.0, 1e9),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn backoff_grows_with_jitter_and_a_cap() {
        let body = json!({"m": 1});
        let d: Vec<Duration> = (0..12).map(|a| backoff(a, &body, 0)).collect();
        for (a, d) in d.iter().enumerate() {
            let full = BASE_DELAY.saturating_mul(1 << a).min(MAX_DELAY);
            assert!(
                *d >= full / 2 && *d < full,
                "attempt {a}: {d:?} vs {full:?}"
            );
        }
        assert_ne!(backoff(3, &body, 0), backoff(3, &body, 1));
    }

    #[test]
    fn retry_after_in_seconds_or_as_a_date() {
        assert_eq!(retry_after("3"), Some(Duration::from_secs(3)));
        assert_eq!(retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(retry_after("-5"), None);
        assert_eq!(retry_after("soon"), None);
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        let later = retry_after("Fri, 01 Jan 2100 00:00:00 GMT").unwrap();
        assert!(later > Duration::from_secs(3600 * 24 * 365));
    }

    #[test]
    fn an_event_waits_at_most_its_bound() {
        let waits = EventWaits::new("e", 2.5);
        assert!(waits.take(Duration::from_secs(1)).is_ok());
        assert!(waits.take(Duration::from_secs(1)).is_ok());
        assert_eq!(
            waits.take(Duration::from_secs(1)),
            Err(Duration::from_secs(2))
        );
        assert_eq!(waits.waited(), 2.0);
    }
}
