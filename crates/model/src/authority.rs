//! `HOST[:PORT]` as URLs and the command line write it, an IPv6 address in brackets
//! (`[fd00::5]:2376`): split once here, for every place that reads one (a load's URL, a proxy,
//! an engine's or a generator's address in a scenario). Each caller then says which hosts and
//! ports it accepts and in its own words.
//!
//! A URL crate is not used for this on purpose: it would normalize what it parses (lower-case
//! the host, percent-encode the path, map names through IDNA), and a load sends its request
//! line and `Host` header as the user wrote them, as ab does.

/// Why a `HOST[:PORT]` text could not be split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AuthorityError {
    #[error("unclosed '[' in IPv6 address")]
    Unclosed,
    #[error("unexpected text after IPv6 address")]
    AfterBracket,
}

/// A `HOST[:PORT]` text split into its host (without brackets) and the port as written (not
/// yet a number: callers word a bad port their own way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Authority<'a> {
    pub host: &'a str,
    pub port: Option<&'a str>,
    /// The host was written in brackets (an IPv6 address).
    pub bracketed: bool,
}

impl<'a> Authority<'a> {
    /// Splits `text`: `[V6]` or `[V6]:PORT` by its brackets, anything else at its last colon
    /// (so an IPv6 address without brackets splits wrongly; [`Authority::bare_colon`] tells).
    pub fn split(text: &'a str) -> Result<Authority<'a>, AuthorityError> {
        if let Some(inner) = text.strip_prefix('[') {
            let (host, after) = inner.split_once(']').ok_or(AuthorityError::Unclosed)?;
            let port = match after {
                "" => None,
                _ => Some(
                    after
                        .strip_prefix(':')
                        .ok_or(AuthorityError::AfterBracket)?,
                ),
            };
            return Ok(Authority {
                host,
                port,
                bracketed: true,
            });
        }
        let (host, port) = match text.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (text, None),
        };
        Ok(Authority {
            host,
            port,
            bracketed: false,
        })
    }

    /// The host holds a colon without brackets: an IPv6 address written bare, which cannot be
    /// told apart from one with a port.
    pub fn bare_colon(&self) -> bool {
        !self.bracketed && self.host.contains(':')
    }

    /// The port as a number a connection can go to (1-65535), if one was written and is one.
    pub fn port_number(&self) -> Option<Result<u16, &'a str>> {
        self.port
            .map(|p| p.parse::<u16>().ok().filter(|&n| n >= 1).ok_or(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Result<(&str, Option<&str>, bool), AuthorityError> {
        Authority::split(text).map(|a| (a.host, a.port, a.bracketed))
    }

    #[test]
    fn names_addresses_and_ports_split() {
        assert_eq!(split("example.org"), Ok(("example.org", None, false)));
        assert_eq!(
            split("127.0.0.1:8080"),
            Ok(("127.0.0.1", Some("8080"), false))
        );
        assert_eq!(split("[::1]"), Ok(("::1", None, true)));
        assert_eq!(split("[fd00::5]:2376"), Ok(("fd00::5", Some("2376"), true)));
        assert_eq!(split("host:"), Ok(("host", Some(""), false)));
    }

    #[test]
    fn brackets_must_close_and_end_the_host() {
        assert_eq!(split("[::1"), Err(AuthorityError::Unclosed));
        assert_eq!(split("[::1]80"), Err(AuthorityError::AfterBracket));
        assert!(Authority::split("::1").unwrap().bare_colon());
        assert!(!Authority::split("[::1]:80").unwrap().bare_colon());
    }

    #[test]
    fn ports_are_one_to_65535() {
        let port = |t: &'static str| Authority::split(t).unwrap().port_number();
        assert_eq!(port("h:80"), Some(Ok(80)));
        assert_eq!(port("h:65535"), Some(Ok(65535)));
        assert_eq!(port("h:0"), Some(Err("0")));
        assert_eq!(port("h:65536"), Some(Err("65536")));
        assert_eq!(port("h:x"), Some(Err("x")));
        assert_eq!(port("h"), None);
    }
}
