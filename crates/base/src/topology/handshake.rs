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
//! fingerprint in turn. The token never crosses the network; nothing is encrypted. The bytes are
//! in [`super::wire`]; the acceptor's side in [`super::accept`].

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};

use sha2::{Digest, Sha256};

use super::admission::{Fingerprint, Session, Token, TOKEN_VAR};
use super::layout::{Cluster, ClusterError};
use super::wire::{
    dial, nonce, parse_session, proof, proof_holds, read_frame, session_bytes, write_frame,
    Verdict, ADMISSION_LINE, ANSWER_WITHIN, MAC, MAGIC, NONCE, SIDE_LINE,
};

/// Connections beside timely's, between process 0 and each other process (several processes
/// only), for what the workers do not send through timely (e.g. progress while they encode).
#[derive(Debug)]
pub enum SideLines {
    /// One process, or none asked for.
    None,
    /// Process 0: one line from each other process, by index.
    First(Vec<(usize, TcpStream)>),
    /// Another process: its line to process 0.
    ToFirst(TcpStream),
}

/// What a round of connections is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// Each other process to process 0 only, before any work ([`super::start::admit`]).
    Admission,
    /// timely's connections between every pair, and with `side` a side line from each other
    /// process to process 0.
    Work { side: bool },
}

/// The connections a process holds so far in one round ([`super::connect::connect_peers`]), and
/// what it shows in each handshake.
pub(super) struct Handshake {
    pub(super) me: usize,
    pub(super) n: usize,
    pub(super) mode: Mode,
    pub(super) addresses: Vec<String>,
    pub(super) fingerprint: Fingerprint,
    pub(super) fingerprint_bytes: Vec<u8>,
    pub(super) token: Option<Token>,
    /// The run's session (after admission).
    pub(super) session: Option<Session>,
    /// Process 0 while admitting: the session it hands out.
    pub(super) proposed: Option<Session>,
    pub(super) sockets: Vec<Option<TcpStream>>,
    pub(super) lines: Vec<Option<TcpStream>>,
    /// (address, kind) of the refusals already logged, so that each is logged once.
    pub(super) warned: HashSet<(IpAddr, &'static str)>,
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
            proposed: (mode == Mode::Admission && me == 0).then(nonce),
            sockets: (0..n).map(|_| None).collect(),
            lines: (0..n).map(|_| None).collect(),
            warned: HashSet::new(),
        }
    }

    /// Whether this process and `p` share a side (or admission) line: process 0 and each
    /// other one.
    pub(super) fn line_with(&self, p: usize) -> bool {
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
    pub(super) fn note(&mut self, from: SocketAddr, kind: &'static str, text: String) {
        if self.warned.insert((from.ip(), kind)) {
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
                let Some(stream) = dial(&self.addresses[p]) else {
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

    /// An error of this process about process `p`.
    fn about(&self, p: usize, what: String) -> ClusterError {
        ClusterError(format!(
            "process {} of {}: process {p} ({}) {what}",
            self.me, self.n, self.addresses[p]
        ))
    }

    /// The dialer's side of the handshake with process `p`. `None`: no answer yet (try again).
    fn dial_exchange(
        &mut self,
        p: usize,
        flag: u64,
        mut stream: TcpStream,
    ) -> Result<Option<TcpStream>, ClusterError> {
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
            tracing::debug!(
                "process {}: no handshake from process {p} yet: {e}",
                self.me
            );
            return Ok(None);
        }
        if reply[..8] != MAGIC {
            return Err(self.about(
                p,
                "answers with something that is not this version of epimine's handshake \
                 (another program on that port, or another epimine version)"
                    .into(),
            ));
        }
        let theirs_index = u64::from_be_bytes(reply[8..16].try_into().expect("8 bytes"));
        if theirs_index != p as u64 {
            return Err(self.about(
                p,
                format!(
                    "says it is process {theirs_index}: the processes were given different \
                     layouts"
                ),
            ));
        }
        let nonces = [mine.to_vec(), reply[16..].to_vec()];
        let digest = Sha256::digest(&self.fingerprint_bytes);
        let parts: [&[u8]; 6] = [
            b"epimine dial",
            &said.to_be_bytes(),
            &session,
            &nonces[0],
            &nonces[1],
            &digest,
        ];
        let mac = self.token.as_ref().map_or([0u8; MAC], |t| proof(t, &parts));
        let answer = stream
            .write_all(&[u8::from(self.token.is_some())])
            .and_then(|()| stream.write_all(&mac))
            .and_then(|()| write_frame(&mut stream, &self.fingerprint_bytes))
            .and_then(|()| {
                let mut verdict = [0u8];
                stream.read_exact(&mut verdict)?;
                let body = read_frame(&mut stream)?;
                let mut tail = [0u8; NONCE + 1 + 1 + MAC];
                stream.read_exact(&mut tail)?;
                Ok((verdict[0], body, tail))
            });
        match answer {
            Ok((verdict, body, tail)) => {
                self.heed(p, verdict, &body, &tail, &nonces)?;
                if let Err(e) = stream.set_read_timeout(None) {
                    tracing::debug!("process {}: {e}", self.me);
                }
                Ok(Some(stream))
            }
            Err(e) => {
                tracing::debug!(
                    "process {}: handshake with process {p} cut short: {e}",
                    self.me
                );
                Ok(None)
            }
        }
    }

    /// The dialer reads the verdict of process `p` (`tail`: its session, whether it holds a
    /// token, its proof): an error unless admitted by a process that proves the token (when
    /// this one has it) and runs this job. In admission, takes the run's session.
    fn heed(
        &mut self,
        p: usize,
        verdict: u8,
        body: &[u8],
        tail: &[u8],
        nonces: &[Vec<u8>; 2],
    ) -> Result<(), ClusterError> {
        let theirs = Fingerprint::from_bytes(body);
        let differs = |t: &Fingerprint| self.fingerprint.differences(t).join("; ");
        if verdict == Verdict::Refused as u8 {
            let why = String::from_utf8_lossy(body);
            return Err(self.about(p, format!("refused this process: {why}")));
        }
        if verdict == Verdict::OtherJob as u8 {
            let diff = theirs.map_or("an unreadable fingerprint".into(), |t| differs(&t));
            return Err(self.about(p, format!("runs another job: {diff}")));
        }
        if verdict != Verdict::Admitted as u8 {
            return Err(self.about(p, format!("answered with verdict {verdict}")));
        }
        let (session, their_token, their_mac) =
            (&tail[..=NONCE], tail[NONCE + 1] == 1, &tail[NONCE + 2..]);
        match (&self.token, their_token) {
            (Some(token), true) => {
                let parts: [&[u8]; 7] = [
                    b"epimine accept",
                    &(p as u64).to_be_bytes(),
                    &[verdict],
                    session,
                    &nonces[0],
                    &nonces[1],
                    &Sha256::digest(body),
                ];
                if !proof_holds(token, &parts, their_mac) {
                    let what = format!("did not prove the token: its {TOKEN_VAR} differs");
                    return Err(self.about(p, what));
                }
            }
            (Some(_), false) => {
                let what = format!("has no token, and this process has one ({TOKEN_VAR})");
                return Err(self.about(p, what));
            }
            (None, true) => {
                let what = format!("holds a token ({TOKEN_VAR}), and this process has none");
                return Err(self.about(p, what));
            }
            (None, false) => {}
        }
        match theirs.map(|t| differs(&t)) {
            Some(d) if d.is_empty() => {}
            Some(d) => return Err(self.about(p, format!("runs another job: {d}"))),
            None => return Err(self.about(p, "sent an unreadable fingerprint".into())),
        }
        if self.mode == Mode::Admission {
            match parse_session(session) {
                Some(s) => self.session = Some(s),
                None => return Err(self.about(p, "admitted this process without a session".into())),
            }
        }
        Ok(())
    }

    /// timely's sockets, the side (or admission) lines, and the run's session (process 0 after
    /// admitting: the one it handed out).
    pub(super) fn into_parts(mut self) -> Connected {
        let with_lines = matches!(self.mode, Mode::Admission | Mode::Work { side: true });
        let lines = if !with_lines {
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

    /// Dials process `p` once it listens (at most 30 s) and makes one handshake, as a line of
    /// kind `flag` (the tests' forged and foreign processes).
    #[cfg(test)]
    pub(super) fn dial_one(
        &mut self,
        p: usize,
        flag: u64,
    ) -> Result<Option<TcpStream>, ClusterError> {
        let begun = std::time::Instant::now();
        loop {
            if let Some(stream) = dial(&self.addresses[p]) {
                return self.dial_exchange(p, flag, stream);
            }
            assert!(begun.elapsed().as_secs() < 30, "nobody listens");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}
