//! The handshake that begins every connection between two processes of a run (timely's, the
//! side lines, the admission lines), and the connections a process holds while it makes them
//! ([`Handshake`]). The dialing process (always the higher index) and the accepting one trade
//! four messages:
//!
//! 1. dialer: a magic word with the protocol version, its index (with what the line is for:
//!    timely, a side line, an admission line), the run's session if it has one, a nonce;
//! 2. acceptor: the magic word, its index, a nonce;
//! 3. dialer: its job's [`Fingerprint`], and with a token an HMAC-SHA256 over both nonces, what
//!    it said and its fingerprint, keyed by the token;
//! 4. acceptor: the verdict (admitted; another job; refused, and why), its own fingerprint, the
//!    run's session, and with a token its own HMAC over the same nonces.
//!
//! The acceptor checks, in order: the token (a wrong or missing one is refused and logged once
//! per address; the run goes on waiting for its own process), the fingerprint (another job: the
//! dialer fails, and so does the acceptor while no run is under way, i.e. before any work), the
//! session and the kind of line (a process of another start of the job is refused), and the
//! index. The dialer fails on any verdict but admitted, and checks the acceptor's proof and
//! fingerprint in turn. The token never crosses the network; nothing is encrypted.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::Duration;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use super::admission::{Fingerprint, Session, Token, TOKEN_VAR};
use super::layout::{Cluster, ClusterError};
use super::SideLines;

/// The bit set in the index a process sends on a side line ([`SideLines`]), to tell it from
/// its timely connection.
pub(super) const SIDE_LINE: u64 = 1 << 63;
/// The bit set in the index a process sends on its admission line to process 0.
pub(super) const ADMISSION_LINE: u64 = 1 << 62;
const FLAGS: u64 = SIDE_LINE | ADMISSION_LINE;

/// The first bytes of every handshake: `EPIMINE` and the protocol's version (2; earlier
/// versions sent the bare index).
const MAGIC: [u8; 8] = *b"EPIMINE\x02";
const NONCE: usize = 16;
const MAC: usize = 32;
/// How long either side waits for the other's next message.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);
/// The largest fingerprint or reason accepted.
const MAX_FRAME: usize = 1 << 20;

/// What a round of connections is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// Each other process to process 0 only, before any work ([`super::admission::admit`]).
    Admission,
    /// timely's connections between every pair, and with `side` a side line from each other
    /// process to process 0.
    Work { side: bool },
}

/// The acceptor's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Admitted = 0,
    OtherJob = 1,
    Refused = 2,
}

type HmacSha256 = Hmac<Sha256>;

/// A length-prefixed block of bytes.
pub(super) fn write_frame(w: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    w.write_all(&(bytes.len() as u32).to_be_bytes())?;
    w.write_all(bytes)
}

/// Reads a block [`write_frame`] wrote (at most 1 MiB).
pub(super) fn read_frame(r: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a block of {len} bytes"),
        ));
    }
    let mut bytes = vec![0u8; len];
    r.read_exact(&mut bytes)?;
    Ok(bytes)
}

fn nonce() -> [u8; NONCE] {
    let mut n = [0u8; NONCE];
    if let Err(e) = getrandom::fill(&mut n) {
        // The system's random source failing is rare; fall back to the clock and the pid,
        // which still differ between handshakes.
        tracing::debug!("no random nonce ({e}); using the clock");
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        n.copy_from_slice(&Sha256::digest(format!("{t}-{}", std::process::id()))[..NONCE]);
    }
    n
}

/// A new session for a run (process 0, when it admits the others).
pub(super) fn new_session() -> Session {
    nonce()
}

fn session_bytes(session: Option<Session>) -> [u8; NONCE + 1] {
    let mut b = [0u8; NONCE + 1];
    if let Some(s) = session {
        b[0] = 1;
        b[1..].copy_from_slice(&s);
    }
    b
}

fn parse_session(b: &[u8]) -> Option<Session> {
    (b[0] == 1).then(|| b[1..=NONCE].try_into().expect("16 bytes"))
}

/// HMAC-SHA256 of `parts` keyed by the token.
fn proof(token: &Token, parts: &[&[u8]]) -> [u8; MAC] {
    let mut mac = HmacSha256::new_from_slice(token.bytes()).expect("HMAC takes any key");
    for p in parts {
        mac.update(&(p.len() as u64).to_be_bytes());
        mac.update(p);
    }
    mac.finalize().into_bytes().into()
}

fn proof_holds(token: &Token, parts: &[&[u8]], given: &[u8]) -> bool {
    let mut mac = HmacSha256::new_from_slice(token.bytes()).expect("HMAC takes any key");
    for p in parts {
        mac.update(&(p.len() as u64).to_be_bytes());
        mac.update(p);
    }
    mac.verify_slice(given).is_ok()
}

/// The connections a process holds so far in one round ([`super::connect_peers`]), and what it
/// shows in each handshake.
pub(super) struct Handshake {
    me: usize,
    n: usize,
    mode: Mode,
    addresses: Vec<String>,
    fingerprint: Fingerprint,
    fingerprint_bytes: Vec<u8>,
    token: Option<Token>,
    /// The run's session (after admission).
    session: Option<Session>,
    /// Process 0 while admitting: the session it hands out.
    proposed: Option<Session>,
    sockets: Vec<Option<TcpStream>>,
    lines: Vec<Option<TcpStream>>,
    /// (address, kind) of the refusals already logged, so that each is logged once.
    warned: HashSet<(IpAddr, String)>,
}

/// What a round of connections gives: timely's sockets, the side (or admission) lines, and the
/// run's session.
pub(super) struct Connected {
    pub sockets: Vec<Option<TcpStream>>,
    pub lines: SideLines,
    pub session: Option<Session>,
}

impl Handshake {
    pub(super) fn new(cluster: &Cluster, mode: Mode, addresses: Vec<String>) -> Self {
        let n = cluster.processes;
        let fingerprint = cluster.fingerprint();
        let me = cluster.process;
        Self {
            me,
            n,
            mode,
            addresses,
            fingerprint_bytes: fingerprint.to_bytes(),
            fingerprint,
            token: cluster.admission.token.clone(),
            session: cluster.admission.session,
            proposed: (mode == Mode::Admission && me == 0).then(new_session),
            sockets: (0..n).map(|_| None).collect(),
            lines: (0..n).map(|_| None).collect(),
            warned: HashSet::new(),
        }
    }

    /// Whether this process and `p` share a side (or admission) line: process 0 and each
    /// other one.
    fn line_with(&self, p: usize) -> bool {
        let star = (self.me == 0) != (p == 0) && p != self.me;
        match self.mode {
            Mode::Admission => star,
            Mode::Work { side } => side && star,
        }
    }

    /// Whether this round holds timely connections.
    fn timely(&self) -> bool {
        matches!(self.mode, Mode::Work { .. })
    }

    /// The flag of this round's lines.
    fn line_flag(&self) -> u64 {
        match self.mode {
            Mode::Admission => ADMISSION_LINE,
            Mode::Work { .. } => SIDE_LINE,
        }
    }

    /// The processes some connection with which is still missing.
    pub(super) fn awaited(&self) -> Vec<String> {
        (0..self.n)
            .filter(|&p| {
                p != self.me
                    && ((self.timely() && self.sockets[p].is_none())
                        || (self.line_with(p) && self.lines[p].is_none()))
            })
            .map(|p| format!("process {p} ({})", self.addresses[p]))
            .collect()
    }

    /// Logs a refused connection once per address and kind (later ones at debug level).
    fn note(&mut self, from: SocketAddr, kind: &str, text: String) {
        if self.warned.insert((from.ip(), kind.to_string())) {
            tracing::warn!("process {}: {text}", self.me);
        } else {
            tracing::debug!("process {}: {text}", self.me);
        }
    }

    /// Dials every lower index not yet connected and makes the handshake. Whether a
    /// connection was made; an error when a process refused this one or runs another job.
    pub(super) fn dial_lower(&mut self) -> Result<bool, ClusterError> {
        let mut progress = false;
        for p in 0..self.me {
            let wanted = [
                (0, self.timely() && self.sockets[p].is_none()),
                (
                    self.line_flag(),
                    self.line_with(p) && self.lines[p].is_none(),
                ),
            ];
            for (flag, missing) in wanted {
                if !missing {
                    continue;
                }
                let Some(stream) = super::dial(&self.addresses[p]) else {
                    continue;
                };
                if let Some(stream) = self.dial_exchange(p, flag, stream)? {
                    match flag {
                        0 => self.sockets[p] = Some(stream),
                        _ => self.lines[p] = Some(stream),
                    }
                    progress = true;
                }
            }
        }
        Ok(progress)
    }

    /// The dialer's side of the handshake with process `p`. `None`: no answer yet (try again).
    fn dial_exchange(
        &mut self,
        p: usize,
        flag: u64,
        mut stream: TcpStream,
    ) -> Result<Option<TcpStream>, ClusterError> {
        let me = self.me;
        let address = self.addresses[p].clone();
        let fail = |what: String| {
            ClusterError(format!(
                "process {me} of {}: process {p} ({address}) {what}",
                self.n
            ))
        };
        let said = self.me as u64 | flag;
        let mine = nonce();
        let session = session_bytes(self.session);
        let hello = [&MAGIC[..], &said.to_be_bytes(), &session, &mine].concat();
        let opened = stream
            .set_nodelay(true)
            .and_then(|()| stream.set_read_timeout(Some(ANSWER_WITHIN)))
            .and_then(|()| stream.set_write_timeout(Some(ANSWER_WITHIN)))
            .and_then(|()| stream.write_all(&hello));
        let mut reply = [0u8; 8 + 8 + NONCE];
        if let Err(e) = opened.and_then(|()| stream.read_exact(&mut reply)) {
            tracing::debug!("process {me}: no handshake from process {p} yet: {e}");
            return Ok(None);
        }
        if reply[..8] != MAGIC {
            return Err(fail(
                "answers with something that is not this version of epimine's handshake (another \
                 program on that port, or another epimine version)"
                    .into(),
            ));
        }
        let theirs_index = u64::from_be_bytes(reply[8..16].try_into().expect("8 bytes"));
        if theirs_index != p as u64 {
            return Err(fail(format!(
                "says it is process {theirs_index}: the processes were given different layouts"
            )));
        }
        let theirs_nonce = &reply[16..];
        let digest = Sha256::digest(&self.fingerprint_bytes);
        let parts: [&[u8]; 6] = [
            b"epimine dial",
            &said.to_be_bytes(),
            &session,
            &mine,
            theirs_nonce,
            &digest,
        ];
        let mac = self.token.as_ref().map_or([0u8; MAC], |t| proof(t, &parts));
        let sent = stream
            .write_all(&[u8::from(self.token.is_some())])
            .and_then(|()| stream.write_all(&mac))
            .and_then(|()| write_frame(&mut stream, &self.fingerprint_bytes));
        let answer = sent.and_then(|()| {
            let mut verdict = [0u8];
            stream.read_exact(&mut verdict)?;
            let body = read_frame(&mut stream)?;
            let mut tail = [0u8; NONCE + 1 + 1 + MAC];
            stream.read_exact(&mut tail)?;
            Ok((verdict[0], body, tail))
        });
        let (verdict, body, tail) = match answer {
            Ok(a) => a,
            Err(e) => {
                tracing::debug!("process {me}: handshake with process {p} cut short: {e}");
                return Ok(None);
            }
        };
        let their_session = parse_session(&tail[..=NONCE]);
        let their_token = tail[NONCE + 1] == 1;
        let their_mac = &tail[NONCE + 2..];
        let theirs = || Fingerprint::from_bytes(&body);
        if verdict == Verdict::Refused as u8 {
            return Err(fail(format!(
                "refused this process: {}",
                String::from_utf8_lossy(&body)
            )));
        }
        if verdict == Verdict::OtherJob as u8 {
            let diff = theirs().map_or_else(
                || vec!["an unreadable fingerprint".into()],
                |t| self.fingerprint.differences(&t),
            );
            return Err(fail(format!("runs another job: {}", diff.join("; "))));
        }
        if verdict != Verdict::Admitted as u8 {
            return Err(fail(format!(
                "answered the handshake with verdict {verdict}"
            )));
        }
        // Admitted: the acceptor must prove the token too, and run this job.
        match (&self.token, their_token) {
            (Some(token), true) => {
                let parts: [&[u8]; 7] = [
                    b"epimine accept",
                    &(p as u64).to_be_bytes(),
                    &[verdict],
                    &tail[..=NONCE],
                    &mine,
                    theirs_nonce,
                    &Sha256::digest(&body),
                ];
                if !proof_holds(token, &parts, their_mac) {
                    return Err(fail(format!(
                        "did not prove the token: its {TOKEN_VAR} differs from this process's"
                    )));
                }
            }
            (Some(_), false) => {
                return Err(fail(format!(
                    "has no token, and this process has one ({TOKEN_VAR})"
                )))
            }
            (None, true) => {
                return Err(fail(format!(
                    "holds a token ({TOKEN_VAR}), and this process has none"
                )))
            }
            (None, false) => {}
        }
        let diff = theirs().map(|t| self.fingerprint.differences(&t));
        match diff {
            Some(d) if d.is_empty() => {}
            Some(d) => return Err(fail(format!("runs another job: {}", d.join("; ")))),
            None => return Err(fail("sent an unreadable fingerprint".into())),
        }
        if self.mode == Mode::Admission {
            match their_session {
                Some(s) => self.session = Some(s),
                None => return Err(fail("admitted this process without a session".into())),
            }
        }
        if let Err(e) = stream.set_read_timeout(None) {
            tracing::debug!("process {me}: {e}");
        }
        Ok(Some(stream))
    }

    /// Takes a connection from a higher index once the handshake admits it; anything else is
    /// refused and logged once per address. Whether it was taken; an error when the process
    /// runs another job and no run is under way.
    pub(super) fn accept(
        &mut self,
        mut stream: TcpStream,
        from: SocketAddr,
    ) -> Result<bool, ClusterError> {
        let me = self.me;
        let mut hello = [0u8; 8 + 8 + NONCE + 1 + NONCE];
        let read = stream
            .set_nonblocking(false)
            .and_then(|()| stream.set_nodelay(true))
            .and_then(|()| stream.set_read_timeout(Some(ANSWER_WITHIN)))
            .and_then(|()| stream.set_write_timeout(Some(ANSWER_WITHIN)))
            .and_then(|()| stream.read_exact(&mut hello));
        if let Err(e) = read {
            self.note(
                from,
                "silent",
                format!(
                    "ignored a connection from {from} that did not say which process it is \
                     ({e})"
                ),
            );
            return Ok(false);
        }
        if hello[..8] != MAGIC {
            self.note(
                from,
                "magic",
                format!(
                    "ignored a connection from {from} that does not speak this version of \
                     epimine's handshake"
                ),
            );
            return Ok(false);
        }
        let said = u64::from_be_bytes(hello[8..16].try_into().expect("8 bytes"));
        let session_given = hello[16..=16 + NONCE].to_vec();
        let theirs_nonce = hello[17 + NONCE..].to_vec();
        let p = usize::try_from(said & !FLAGS).unwrap_or(usize::MAX);
        let flag = said & FLAGS;
        let mine = nonce();
        let reply = [&MAGIC[..], &(me as u64).to_be_bytes(), &mine].concat();
        let proof_in = stream.write_all(&reply).and_then(|()| {
            let mut has = [0u8];
            stream.read_exact(&mut has)?;
            let mut mac = [0u8; MAC];
            stream.read_exact(&mut mac)?;
            let fp = read_frame(&mut stream)?;
            Ok((has[0] == 1, mac, fp))
        });
        let (their_token, their_mac, fp) = match proof_in {
            Ok(x) => x,
            Err(e) => {
                self.note(
                    from,
                    "cut",
                    format!("ignored a connection from {from} that broke off its handshake ({e})"),
                );
                return Ok(false);
            }
        };
        let who = format!("a connection from {from} that says it is process {p}");
        let named = match self.addresses.get(p) {
            Some(address) if p != me => format!("process {p} ({address}, connecting from {from})"),
            _ => format!("a process from {from} that says it is process {p}"),
        };
        // 1. The token.
        let token_problem: Option<(&str, String)> = match (&self.token, their_token) {
            (Some(token), true) => {
                let parts: [&[u8]; 6] = [
                    b"epimine dial",
                    &said.to_be_bytes(),
                    &session_given,
                    &theirs_nonce,
                    &mine,
                    &Sha256::digest(&fp),
                ];
                (!proof_holds(token, &parts, &their_mac)).then(|| {
                    (
                        "wrong token",
                        format!("a wrong token (its {TOKEN_VAR} differs from process {me}'s)"),
                    )
                })
            }
            (Some(_), false) => Some((
                "no token",
                format!("no token, and this run requires one (process {me} has {TOKEN_VAR} set)"),
            )),
            (None, true) => Some((
                "a token",
                format!(
                    "a token ({TOKEN_VAR}), and process {me} has none: give every process the \
                     same {TOKEN_VAR}, or none"
                ),
            )),
            (None, false) => None,
        };
        if let Some((kind, problem)) = token_problem {
            self.answer(
                &mut stream,
                Verdict::Refused,
                problem.as_bytes(),
                &theirs_nonce,
                &mine,
            );
            self.note(from, kind, format!("refused {who}: it presented {problem}"));
            return Ok(false);
        }
        // 2. The job.
        let Some(theirs) = Fingerprint::from_bytes(&fp) else {
            let text = "its fingerprint is unreadable";
            self.answer(
                &mut stream,
                Verdict::Refused,
                text.as_bytes(),
                &theirs_nonce,
                &mine,
            );
            self.note(from, "fingerprint", format!("refused {who}: {text}"));
            return Ok(false);
        };
        let diff = self.fingerprint.differences(&theirs);
        if !diff.is_empty() {
            let own = self.fingerprint_bytes.clone();
            self.answer(&mut stream, Verdict::OtherJob, &own, &theirs_nonce, &mine);
            let diff = diff.join("; ");
            if self.session.is_none() {
                return Err(ClusterError(format!(
                    "process {me} of {}: {named} runs another job: {diff}",
                    self.n
                )));
            }
            self.note(
                from,
                "job",
                format!("refused {named}: it runs another job: {diff} (this run goes on)"),
            );
            return Ok(false);
        }
        // 3. The run: the kind of line and the session.
        let wanted_flag = match (self.mode, flag) {
            (Mode::Admission, ADMISSION_LINE) => true,
            (Mode::Work { .. }, 0) => true,
            (Mode::Work { .. }, SIDE_LINE) => self.line_with(p),
            _ => false,
        };
        let run_problem = if parse_session(&session_given) != self.session {
            Some(format!(
                "it belongs to another start of this job (process {me} is in {})",
                match self.session {
                    Some(_) => "a run under way",
                    None => "a start",
                }
            ))
        } else if !wanted_flag {
            Some(format!(
                "it asks for a {} connection, which process {me} does not take now",
                match flag {
                    ADMISSION_LINE => "start",
                    SIDE_LINE => "progress",
                    0 => "timely",
                    _ => "unknown",
                }
            ))
        } else if p <= me || p >= self.n {
            Some(format!(
                "process {me} takes connections from processes {} to {} only",
                me + 1,
                self.n - 1
            ))
        } else {
            let held = match flag {
                0 => &self.sockets[p],
                _ => &self.lines[p],
            };
            held.is_some()
                .then(|| format!("process {me} already has a process {p}"))
        };
        if let Some(problem) = run_problem {
            self.answer(
                &mut stream,
                Verdict::Refused,
                problem.as_bytes(),
                &theirs_nonce,
                &mine,
            );
            self.note(from, "run", format!("refused {who}: {problem}"));
            return Ok(false);
        }
        let own = self.fingerprint_bytes.clone();
        if !self.answer(&mut stream, Verdict::Admitted, &own, &theirs_nonce, &mine) {
            return Ok(false);
        }
        if let Err(e) = stream.set_read_timeout(None) {
            tracing::debug!("process {me}: {e}");
        }
        match flag {
            0 => self.sockets[p] = Some(stream),
            _ => self.lines[p] = Some(stream),
        }
        Ok(true)
    }

    /// Sends the verdict (with the session this round hands out, and with a token the proof).
    /// Whether it was sent.
    fn answer(
        &self,
        stream: &mut TcpStream,
        verdict: Verdict,
        body: &[u8],
        theirs_nonce: &[u8],
        mine: &[u8],
    ) -> bool {
        let session = session_bytes(self.proposed.or(self.session));
        let digest = Sha256::digest(body);
        let parts: [&[u8]; 7] = [
            b"epimine accept",
            &(self.me as u64).to_be_bytes(),
            &[verdict as u8],
            &session,
            theirs_nonce,
            mine,
            &digest,
        ];
        let mac = self.token.as_ref().map_or([0u8; MAC], |t| proof(t, &parts));
        let sent = stream
            .write_all(&[verdict as u8])
            .and_then(|()| write_frame(stream, body))
            .and_then(|()| stream.write_all(&session))
            .and_then(|()| stream.write_all(&[u8::from(self.token.is_some())]))
            .and_then(|()| stream.write_all(&mac));
        if let Err(e) = &sent {
            tracing::debug!("process {}: sending a verdict: {e}", self.me);
        }
        sent.is_ok()
    }

    /// timely's sockets, the side (or admission) lines, and the run's session (process 0 after
    /// admitting: the one it handed out).
    pub(super) fn into_parts(mut self) -> Connected {
        let several_lines = matches!(self.mode, Mode::Admission | Mode::Work { side: true });
        let lines = if !several_lines {
            SideLines::None
        } else if self.me == 0 {
            SideLines::First(
                self.lines
                    .into_iter()
                    .enumerate()
                    .filter_map(|(p, l)| Some((p, l?)))
                    .collect(),
            )
        } else {
            self.lines[0]
                .take()
                .map_or(SideLines::None, SideLines::ToFirst)
        };
        Connected {
            sockets: self.sockets,
            lines,
            session: self.proposed.or(self.session),
        }
    }
}

#[cfg(test)]
impl Handshake {
    /// Dials process `p` once it listens (at most 30 s) and makes one handshake, as a line of
    /// kind `flag`.
    fn dial_one(&mut self, p: usize, flag: u64) -> Result<Option<TcpStream>, ClusterError> {
        let begun = std::time::Instant::now();
        loop {
            if let Some(stream) = super::dial(&self.addresses[p]) {
                return self.dial_exchange(p, flag, stream);
            }
            assert!(begun.elapsed() < Duration::from_secs(30), "nobody listens");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::super::{connect_peers, Cluster};
    use super::*;

    const SECRET: &str = "s3cr3t-token-value";

    /// A log written to memory.
    #[derive(Clone, Default)]
    struct Log(Arc<Mutex<Vec<u8>>>);

    impl Write for Log {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Log {
        fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
        }
    }

    /// Process `process` of two on free loopback ports, of the job `corpus`, with the token.
    fn two(addresses: &[String], process: usize, corpus: &str) -> Cluster {
        let mut c = Cluster {
            processes: 2,
            process,
            addresses: addresses.to_vec(),
            startup_timeout: 60,
            ..Cluster::default()
        }
        .with_job(Fingerprint::new().with("corpus", corpus));
        c.admission.token = Some(Token(SECRET.into()));
        c
    }

    fn free_addresses() -> Vec<String> {
        let ls: Vec<_> = (0..2)
            .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
            .collect();
        ls.iter()
            .map(|l| format!("127.0.0.1:{}", l.local_addr().unwrap().port()))
            .collect()
    }

    /// Process 0 of `cluster` connecting in `mode` on a thread, its log kept.
    fn process_0(
        cluster: Cluster,
        mode: Mode,
    ) -> (
        std::thread::JoinHandle<Result<Connected, ClusterError>>,
        Log,
    ) {
        let log = Log::default();
        let writer = log.clone();
        let thread = std::thread::spawn(move || {
            let subscriber = tracing_subscriber::fmt()
                .with_writer(move || writer.clone())
                .with_ansi(false)
                .with_max_level(tracing::Level::INFO)
                .finish();
            tracing::subscriber::with_default(subscriber, || connect_peers(&cluster, mode))
        });
        (thread, log)
    }

    /// In a run under way (its events round, with side lines), junk, a forged side line
    /// without the token, a side line of another job and one of another start are refused
    /// and each logged once; the run's own process 1 still joins.
    #[test]
    fn a_foreign_or_forged_side_line_is_refused_and_logged_once_and_the_run_goes_on() {
        let addresses = free_addresses();
        let mode = Mode::Work { side: true };
        let mut zero = two(&addresses, 0, "corpus/");
        zero.admission.session = Some([7; 16]);
        let mut one = two(&addresses, 1, "corpus/");
        one.admission.session = Some([7; 16]);
        let (p0, log) = process_0(zero, mode);
        let attempt = |cluster: &Cluster| {
            Handshake::new(cluster, mode, addresses.clone())
                .dial_one(0, SIDE_LINE)
                .map(|s| s.is_some())
        };
        for _ in 0..2 {
            let mut junk = loop {
                if let Some(s) = super::super::dial(&addresses[0]) {
                    break s;
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            junk.write_all(&[b'x'; 64]).unwrap();
            let mut answer = Vec::new();
            let _ = junk.read_to_end(&mut answer);
            assert!(answer.is_empty(), "junk gets no answer");
        }
        let mut forged = one.clone();
        forged.admission.token = None;
        let mut wrong = one.clone();
        wrong.admission.token = Some(Token("another-secret".into()));
        let foreign = one
            .clone()
            .with_job(Fingerprint::new().with("corpus", "other-corpus/"));
        let mut stale = one.clone();
        stale.admission.session = Some([8; 16]);
        for _ in 0..2 {
            let e = attempt(&forged).unwrap_err().to_string();
            assert!(e.contains("refused this process: no token"), "{e}");
            let e = attempt(&wrong).unwrap_err().to_string();
            assert!(e.contains("refused this process: a wrong token"), "{e}");
            let e = attempt(&foreign).unwrap_err().to_string();
            assert!(
                e.contains(&format!(
                    "process 0 ({}) runs another job: corpus corpus/ vs other-corpus/",
                    addresses[0]
                )),
                "{e}"
            );
            let e = attempt(&stale).unwrap_err().to_string();
            assert!(e.contains("another start of this job"), "{e}");
        }
        // The run's own process 1: timely's connection and its side line.
        let joined = connect_peers(&one, mode).unwrap();
        assert!(joined.sockets[0].is_some());
        assert!(matches!(joined.lines, SideLines::ToFirst(_)));
        let first = p0.join().unwrap().unwrap();
        assert!(first.sockets[1].is_some());
        assert!(matches!(&first.lines, SideLines::First(l) if l.len() == 1 && l[0].0 == 1));
        let text = log.text();
        for (said, what) in [
            ("does not speak this version", "junk"),
            ("it presented no token", "the forged line"),
            ("it presented a wrong token", "the wrong token"),
            (
                "runs another job: corpus other-corpus/ vs corpus/",
                "the foreign job",
            ),
            ("another start of this job", "the stale start"),
        ] {
            assert_eq!(text.matches(said).count(), 1, "{what} logged once:\n{text}");
        }
        assert!(
            !text.contains(SECRET) && !text.contains("another-secret"),
            "{text}"
        );
    }

    /// Before any work (admission), process 0 refuses a process of another job and both fail
    /// at once, naming what differs; the same job is admitted and given process 0's session.
    #[test]
    fn another_job_is_refused_before_any_work_and_both_fail() {
        let addresses = free_addresses();
        let (p0, _) = process_0(two(&addresses, 0, "corpus/"), Mode::Admission);
        let foreign = two(&addresses, 1, "other-corpus/");
        let e = connect_peers(&foreign, Mode::Admission)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("runs another job: corpus corpus/ vs other-corpus/"),
            "{e}"
        );
        let e = p0.join().unwrap().err().unwrap().to_string();
        assert!(
            e.starts_with("cluster: process 0 of 2: process 1 (")
                && e.contains("runs another job: corpus other-corpus/ vs corpus/"),
            "{e}"
        );

        let (p0, _) = process_0(two(&addresses, 0, "corpus/"), Mode::Admission);
        let one = connect_peers(&two(&addresses, 1, "corpus/"), Mode::Admission).unwrap();
        let zero = p0.join().unwrap().unwrap();
        assert!(zero.session.is_some());
        assert_eq!(one.session, zero.session);
        assert!(matches!(one.lines, SideLines::ToFirst(_)));
    }
}
