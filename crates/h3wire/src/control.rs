//! A connection's unidirectional streams (RFC 9114, section 6.2; RFC 9204, section 4.2): the
//! three a client opens, and [`UniReader`], which reads each one the server opens into the
//! connection's [`Peer`] and holds the server to the rules of each: a control stream that
//! starts with SETTINGS and never ends, no second one, no push the client never allowed, no
//! insert into a dynamic table of capacity 0.

use crate::frame::{code, kind, setting, stream_type, FrameReader, Piece};
use crate::{varint, Error};

/// The streams a client opens once connected, each with the bytes to write on it (and never
/// to end): the control stream with its SETTINGS (no dynamic table, no blocked streams,
/// field sections up to `max_field_section` bytes), and QPACK's encoder and decoder streams,
/// which a table of capacity 0 leaves empty but which servers expect to see.
pub fn client_streams(max_field_section: u64) -> [Vec<u8>; 3] {
    let mut control = Vec::new();
    varint::put(stream_type::CONTROL, &mut control);
    crate::frame::put_settings(
        &[
            (setting::QPACK_MAX_TABLE_CAPACITY, 0),
            (setting::QPACK_BLOCKED_STREAMS, 0),
            (setting::MAX_FIELD_SECTION_SIZE, max_field_section),
        ],
        &mut control,
    );
    [
        control,
        vec![stream_type::QPACK_ENCODER as u8],
        vec![stream_type::QPACK_DECODER as u8],
    ]
}

/// What the server's unidirectional streams have said so far.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Peer {
    /// Its SETTINGS, once its control stream brought them.
    pub settings: Option<Vec<(u64, u64)>>,
    /// The lowest request stream its latest GOAWAY refused.
    pub goaway: Option<u64>,
    control: bool,
    encoder: bool,
    decoder: bool,
}

impl Peer {
    /// The largest field section it accepts (its SETTINGS_MAX_FIELD_SECTION_SIZE; unlimited
    /// until said).
    pub fn max_field_section(&self) -> u64 {
        self.settings
            .iter()
            .flatten()
            .find(|(id, _)| *id == setting::MAX_FIELD_SECTION_SIZE)
            .map_or(u64::MAX, |(_, v)| *v)
    }

    /// Whether request stream `id` may still be sent: none the server said it refuses.
    pub fn accepts(&self, id: u64) -> bool {
        self.goaway.is_none_or(|g| id < g)
    }
}

/// What one of the server's unidirectional streams turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Its type not read yet: `have` bytes of it in `head`.
    Unknown {
        head: [u8; 8],
        have: usize,
    },
    Control {
        settings: bool,
    },
    Encoder,
    /// QPACK's decoder stream, and any stream of a type HTTP/3 does not know (an extension,
    /// or grease): read and dropped.
    Ignored,
}

/// Reads one unidirectional stream the server opened.
#[derive(Debug)]
pub struct UniReader {
    role: Role,
    frames: FrameReader,
}

impl Default for UniReader {
    fn default() -> Self {
        UniReader {
            role: Role::Unknown {
                head: [0; 8],
                have: 0,
            },
            // A control stream carries SETTINGS and GOAWAY: a few bytes each.
            frames: FrameReader::new(4096),
        }
    }
}

fn error(code: u64, what: impl Into<String>) -> Error {
    Error::Frame(code, what.into())
}

/// QPACK_ENCODER_STREAM_ERROR (RFC 9204, section 6).
const QPACK_ENCODER_STREAM_ERROR: u64 = 0x201;

impl UniReader {
    /// Reads the stream's next bytes into `peer`.
    pub fn feed(&mut self, peer: &mut Peer, mut input: &[u8]) -> Result<(), Error> {
        while !input.is_empty() {
            match self.role {
                Role::Unknown { mut head, mut have } => {
                    head[have] = input[0];
                    have += 1;
                    input = &input[1..];
                    self.role = match varint::get(&head[..have]) {
                        None => Role::Unknown { head, have },
                        Some((t, _)) => Self::role(peer, t)?,
                    };
                }
                Role::Control { .. } => return self.control(peer, input),
                Role::Encoder => return encoder_instructions(input),
                Role::Ignored => return Ok(()),
            }
        }
        Ok(())
    }

    /// At the stream's end (or its reset): closing the control stream is a connection error.
    pub fn finish(&self) -> Result<(), Error> {
        match self.role {
            Role::Control { .. } | Role::Encoder => Err(error(
                code::H3_CLOSED_CRITICAL_STREAM,
                "the server closed a critical stream",
            )),
            _ => Ok(()),
        }
    }

    fn role(peer: &mut Peer, t: u64) -> Result<Role, Error> {
        let once = |seen: &mut bool, what: &str| {
            if std::mem::replace(seen, true) {
                return Err(error(
                    code::H3_STREAM_CREATION_ERROR,
                    format!("a second {what} stream"),
                ));
            }
            Ok(())
        };
        Ok(match t {
            stream_type::CONTROL => {
                once(&mut peer.control, "control")?;
                Role::Control { settings: false }
            }
            stream_type::QPACK_ENCODER => {
                once(&mut peer.encoder, "QPACK encoder")?;
                Role::Encoder
            }
            stream_type::QPACK_DECODER => {
                once(&mut peer.decoder, "QPACK decoder")?;
                Role::Ignored
            }
            stream_type::PUSH => {
                return Err(error(
                    code::H3_ID_ERROR,
                    "a push stream, though no push was allowed",
                ))
            }
            _ => Role::Ignored,
        })
    }

    fn control(&mut self, peer: &mut Peer, mut input: &[u8]) -> Result<(), Error> {
        while let Some(piece) = self.frames.next(&mut input)? {
            let Role::Control { settings } = &mut self.role else {
                unreachable!("read as a control stream")
            };
            match piece {
                Piece::Settings(s) if !*settings => {
                    *settings = true;
                    check_settings(&s)?;
                    peer.settings = Some(s);
                }
                _ if !*settings => {
                    return Err(error(
                        code::H3_MISSING_SETTINGS,
                        "the control stream did not start with SETTINGS",
                    ))
                }
                Piece::Goaway(id) => {
                    if peer.goaway.is_some_and(|g| id > g) {
                        return Err(error(
                            code::H3_ID_ERROR,
                            format!(
                                "a GOAWAY that raised its stream from {:?} to {id}",
                                peer.goaway
                            ),
                        ));
                    }
                    peer.goaway = Some(id);
                }
                Piece::Other { kind: k, .. } if k == kind::CANCEL_PUSH => {
                    return Err(error(
                        code::H3_ID_ERROR,
                        "a CANCEL_PUSH, though no push was allowed",
                    ))
                }
                other => {
                    return Err(error(
                        code::H3_FRAME_UNEXPECTED,
                        format!("{other:?} on the control stream"),
                    ))
                }
            }
        }
        Ok(())
    }
}

/// Settings HTTP/2 had and HTTP/3 reserves, or one given twice: H3_SETTINGS_ERROR.
fn check_settings(settings: &[(u64, u64)]) -> Result<(), Error> {
    for (i, (id, _)) in settings.iter().enumerate() {
        if matches!(id, 0x02..=0x05) {
            return Err(error(
                code::H3_SETTINGS_ERROR,
                format!("setting {id:#x} is HTTP/2's, reserved in HTTP/3"),
            ));
        }
        if settings[..i].iter().any(|(other, _)| other == id) {
            return Err(error(
                code::H3_SETTINGS_ERROR,
                format!("setting {id:#x} given twice"),
            ));
        }
    }
    Ok(())
}

/// The server's QPACK encoder instructions, against a dynamic table of capacity 0: only
/// "Set Dynamic Table Capacity" to 0 (`001` and a 5-bit prefixed 0) is allowed; anything else
/// would insert into or size a table the client never allowed.
fn encoder_instructions(input: &[u8]) -> Result<(), Error> {
    match input.iter().find(|&&b| b != 0x20) {
        None => Ok(()),
        Some(b) => Err(error(
            QPACK_ENCODER_STREAM_ERROR,
            format!("encoder instruction {b:#04x} on a dynamic table of capacity 0"),
        )),
    }
}

#[cfg(test)]
mod tests;
