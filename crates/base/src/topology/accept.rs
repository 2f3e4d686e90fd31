//! The accepting side of the handshake ([`super::handshake`]): what the dialer said
//! ([`Handshake::receive`]), the checks in order ([`Handshake::judge`]: the token, the job, the
//! session and kind of line, the index), and the verdict sent back.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use sha2::{Digest, Sha256};

use super::admission::{Fingerprint, TOKEN_VAR};
use super::handshake::{Handshake, Mode};
use super::layout::ClusterError;
use super::wire::{
    nonce, parse_session, proof, proof_holds, read_frame, session_bytes, write_frame, Verdict,
    ADMISSION_LINE, ANSWER_WITHIN, FLAGS, HELLO, MAC, MAGIC, NONCE, SIDE_LINE,
};

/// What the acceptor decides about a connection.
enum Judgement {
    Admit,
    /// Refused; the dialer is told `reason`, the log (once per address and `kind`) `log`.
    Refuse {
        kind: &'static str,
        reason: String,
        log: String,
    },
    /// A process of another job: `diff` says what differs.
    OtherJob {
        diff: String,
    },
}

/// What a dialer sent in messages 1 and 3, and the acceptor's own nonce.
struct Incoming {
    said: u64,
    session: Vec<u8>,
    theirs_nonce: Vec<u8>,
    mine: [u8; NONCE],
    token: bool,
    mac: [u8; MAC],
    fingerprint: Vec<u8>,
}

/// A connection and what its dialer said in messages 1 and 3, or why it is not this handshake
/// (a kind of refusal and the line to log once per address).
pub(super) struct Received {
    stream: TcpStream,
    from: SocketAddr,
    said: Result<Incoming, (&'static str, String)>,
}

/// Reads messages 1 to 3 of a connection on a thread of its own (each read bounded by
/// [`ANSWER_WITHIN`]) and sends the outcome to `done`; an error when no thread can be started.
pub(super) fn receive_on_thread(
    me: usize,
    mut stream: TcpStream,
    from: SocketAddr,
    done: std::sync::mpsc::Sender<Received>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("handshake-in".into())
        .spawn(move || {
            let said = receive(me, &mut stream, from);
            // The run may have all its connections and gone on: nobody to tell.
            let _ = done.send(Received { stream, from, said });
        })
        .map(|_| ())
}

/// The acceptor's side of messages 1 to 3 (`me`: this process's index): what the dialer said,
/// or why it is not this handshake.
fn receive(
    me: usize,
    stream: &mut TcpStream,
    from: SocketAddr,
) -> Result<Incoming, (&'static str, String)> {
    let mut hello = [0u8; HELLO];
    let read = stream
        .set_nonblocking(false)
        .and_then(|()| stream.set_nodelay(true))
        .and_then(|()| stream.set_read_timeout(Some(ANSWER_WITHIN)))
        .and_then(|()| stream.set_write_timeout(Some(ANSWER_WITHIN)))
        .and_then(|()| stream.read_exact(&mut hello));
    if let Err(e) = read {
        return Err((
            "silent",
            format!("ignored a connection from {from} that did not say which process it is ({e})"),
        ));
    }
    if hello[..8] != MAGIC {
        return Err((
            "magic",
            format!(
                "ignored a connection from {from} that does not speak this version of \
                 epimine's handshake"
            ),
        ));
    }
    let mine = nonce();
    let reply = [&MAGIC[..], &(me as u64).to_be_bytes(), &mine].concat();
    let proof_in = stream.write_all(&reply).and_then(|()| {
        let mut has = [0u8];
        stream.read_exact(&mut has)?;
        let mut mac = [0u8; MAC];
        stream.read_exact(&mut mac)?;
        Ok((has[0] == 1, mac, read_frame(stream)?))
    });
    match proof_in {
        Ok((token, mac, fingerprint)) => Ok(Incoming {
            said: u64::from_be_bytes(hello[8..16].try_into().expect("8 bytes")),
            session: hello[16..=16 + NONCE].to_vec(),
            theirs_nonce: hello[17 + NONCE..].to_vec(),
            mine,
            token,
            mac,
            fingerprint,
        }),
        Err(e) => Err((
            "cut",
            format!("ignored a connection from {from} that broke off its handshake ({e})"),
        )),
    }
}

impl Handshake {
    /// Takes a connection from a higher index once the handshake admits it; anything else is
    /// refused and logged once per address. Whether it was taken; an error when the process
    /// runs another job and no run is under way.
    ///
    /// What the dialer said was read on a thread of its own ([`receive_on_thread`]), so that a
    /// connection that says nothing holds up no other.
    pub(super) fn take(&mut self, received: Received) -> Result<bool, ClusterError> {
        let Received {
            mut stream,
            from,
            said,
        } = received;
        let incoming = match said {
            Ok(incoming) => incoming,
            Err((kind, text)) => {
                self.note(from, kind, text);
                return Ok(false);
            }
        };
        let p = usize::try_from(incoming.said & !FLAGS).unwrap_or(usize::MAX);
        let own = self.fingerprint_bytes.clone();
        match self.judge(&incoming, p, from) {
            Judgement::Admit => {
                if !self.answer(&mut stream, Verdict::Admitted, &own, &incoming) {
                    return Ok(false);
                }
                if let Err(e) = stream.set_read_timeout(None) {
                    tracing::debug!("process {}: {e}", self.me);
                }
                match incoming.said & FLAGS {
                    0 => self.sockets[p] = Some(stream),
                    _ => self.lines[p] = Some(stream),
                }
                Ok(true)
            }
            Judgement::Refuse { kind, reason, log } => {
                self.answer(&mut stream, Verdict::Refused, reason.as_bytes(), &incoming);
                self.note(from, kind, log);
                Ok(false)
            }
            Judgement::OtherJob { diff } => {
                self.answer(&mut stream, Verdict::OtherJob, &own, &incoming);
                let named = match self.addresses.get(p) {
                    Some(a) if p != self.me => format!("process {p} ({a}, connecting from {from})"),
                    _ => format!("a process from {from} that says it is process {p}"),
                };
                if self.session.is_none() {
                    return Err(ClusterError(format!(
                        "process {} of {}: {named} runs another job: {diff}",
                        self.me, self.n
                    )));
                }
                let log =
                    format!("refused {named}: it runs another job: {diff} (this run goes on)");
                self.note(from, "job", log);
                Ok(false)
            }
        }
    }

    /// The acceptor's checks, in order: the token, the job, the session and kind of line, the
    /// index.
    fn judge(&self, incoming: &Incoming, p: usize, from: SocketAddr) -> Judgement {
        let me = self.me;
        let refuse = |kind, reason: String| Judgement::Refuse {
            kind,
            log: format!(
                "refused a connection from {from} that says it is process {p}: it presented \
                 {reason}"
            ),
            reason,
        };
        let unfit = |reason: String| Judgement::Refuse {
            kind: "run",
            log: format!("refused a connection from {from} that says it is process {p}: {reason}"),
            reason,
        };
        match (&self.token, incoming.token) {
            (Some(token), true) => {
                let parts: [&[u8]; 6] = [
                    b"epimine dial",
                    &incoming.said.to_be_bytes(),
                    &incoming.session,
                    &incoming.theirs_nonce,
                    &incoming.mine,
                    &Sha256::digest(&incoming.fingerprint),
                ];
                if !proof_holds(token, &parts, &incoming.mac) {
                    let why =
                        format!("a wrong token (its {TOKEN_VAR} differs from process {me}'s)");
                    return refuse("wrong token", why);
                }
            }
            (Some(_), false) => {
                let why = format!(
                    "no token, and this run requires one (process {me} has {TOKEN_VAR} set)"
                );
                return refuse("no token", why);
            }
            (None, true) => {
                let why = format!(
                    "a token ({TOKEN_VAR}), and process {me} has none: give every process the \
                     same {TOKEN_VAR}, or none"
                );
                return refuse("a token", why);
            }
            (None, false) => {}
        }
        let Some(theirs) = Fingerprint::from_bytes(&incoming.fingerprint) else {
            return unfit("its fingerprint is unreadable".into());
        };
        let diff = self.fingerprint.differences(&theirs);
        if !diff.is_empty() {
            return Judgement::OtherJob {
                diff: diff.join("; "),
            };
        }
        let flag = incoming.said & FLAGS;
        let wanted = match (self.mode, flag) {
            (Mode::Admission, ADMISSION_LINE) | (Mode::Work { .. }, 0) => true,
            (Mode::Work { .. }, SIDE_LINE) => self.line_with(p),
            _ => false,
        };
        if parse_session(&incoming.session) != self.session {
            let now = if self.session.is_some() {
                "a run under way"
            } else {
                "a start"
            };
            unfit(format!(
                "it belongs to another start of this job (process {me} is in {now})"
            ))
        } else if !wanted {
            let kind = match flag {
                ADMISSION_LINE => "start",
                SIDE_LINE => "progress",
                _ => "timely",
            };
            unfit(format!(
                "it asks for a {kind} connection, which process {me} does not take now"
            ))
        } else if p <= me || p >= self.n {
            unfit(format!(
                "process {me} takes connections from processes {} to {} only",
                me + 1,
                self.n - 1
            ))
        } else if [&self.sockets, &self.lines][usize::from(flag != 0)][p].is_some() {
            unfit(format!("process {me} already has a process {p}"))
        } else {
            Judgement::Admit
        }
    }

    /// Sends the verdict (with the session this round hands out, and with a token the proof).
    /// Whether it was sent.
    fn answer(
        &self,
        stream: &mut TcpStream,
        verdict: Verdict,
        body: &[u8],
        incoming: &Incoming,
    ) -> bool {
        let session = session_bytes(self.proposed.or(self.session));
        let digest = Sha256::digest(body);
        let parts: [&[u8]; 7] = [
            b"epimine accept",
            &(self.me as u64).to_be_bytes(),
            &[verdict as u8],
            &session,
            &incoming.theirs_nonce,
            &incoming.mine,
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
}
