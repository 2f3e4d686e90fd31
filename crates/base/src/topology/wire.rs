//! The bytes of the handshake ([`super::handshake`]): its constants, length-prefixed blocks,
//! nonces and sessions, and the HMAC-SHA256 proofs of the token.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use super::admission::{Session, Token};

/// The bit set in the index a process sends on a side line ([`super::SideLines`]), to tell it from
/// its timely connection.
pub(super) const SIDE_LINE: u64 = 1 << 63;
/// The bit set in the index a process sends on its admission line to process 0.
pub(super) const ADMISSION_LINE: u64 = 1 << 62;
pub(super) const FLAGS: u64 = SIDE_LINE | ADMISSION_LINE;

/// The first bytes of every handshake: `EPIMINE` and the protocol's version (2; earlier
/// versions sent the bare index).
pub(super) const MAGIC: [u8; 8] = *b"EPIMINE\x02";
pub(super) const NONCE: usize = 16;
pub(super) const MAC: usize = 32;
/// The dialer's first message: magic, index and flags, session (flag and 16 bytes), nonce.
pub(super) const HELLO: usize = 8 + 8 + NONCE + 1 + NONCE;
/// How long either side waits for the other's next message.
pub(super) const ANSWER_WITHIN: Duration = Duration::from_secs(10);
/// The largest fingerprint or reason accepted.
pub(super) const MAX_FRAME: usize = 1 << 20;

/// The acceptor's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    Admitted = 0,
    OtherJob = 1,
    Refused = 2,
}

type HmacSha256 = Hmac<Sha256>;

/// A connection to the first address of `address` (`host:port`, several separated by
/// spaces) that answers within half a second; `None` while nobody listens there.
pub(super) fn dial(address: &str) -> Option<TcpStream> {
    use std::net::ToSocketAddrs;
    let first = address.split_whitespace().next()?;
    first
        .to_socket_addrs()
        .ok()?
        .find_map(|a| TcpStream::connect_timeout(&a, Duration::from_millis(500)).ok())
}

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

pub(super) fn nonce() -> [u8; NONCE] {
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

pub(super) fn session_bytes(session: Option<Session>) -> [u8; NONCE + 1] {
    let mut b = [0u8; NONCE + 1];
    if let Some(s) = session {
        b[0] = 1;
        b[1..].copy_from_slice(&s);
    }
    b
}

pub(super) fn parse_session(b: &[u8]) -> Option<Session> {
    (b[0] == 1).then(|| b[1..=NONCE].try_into().expect("16 bytes"))
}

/// HMAC-SHA256 of `parts` (each with its length) keyed by the token.
fn mac_of(token: &Token, parts: &[&[u8]]) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(token.bytes()).expect("HMAC takes any key");
    for p in parts {
        mac.update(&(p.len() as u64).to_be_bytes());
        mac.update(p);
    }
    mac
}

pub(super) fn proof(token: &Token, parts: &[&[u8]]) -> [u8; MAC] {
    mac_of(token, parts).finalize().into_bytes().into()
}

/// Whether `given` is the proof of `parts` (compared in constant time).
pub(super) fn proof_holds(token: &Token, parts: &[&[u8]], given: &[u8]) -> bool {
    mac_of(token, parts).verify_slice(given).is_ok()
}
