//! Where a request's body ends, and whether its head may be answered at all (RFC 9112).
//!
//! httparse reads the request line and the header lines; what it leaves to us is what decides
//! framing and request smuggling: Content-Length (digits only, one value), Transfer-Encoding
//! (chunked last; read by the chunked coding even beside a Content-Length, then the connection
//! closes), the chunked body itself, and Host (exactly one, valid, in HTTP/1.1).

/// How the body of a request is delimited.
#[derive(Debug, PartialEq)]
pub enum Body {
    Length(usize),
    Chunked,
}

/// The request's body framing, and whether the connection must close after the answer
/// (RFC 9112 §6.1: Transfer-Encoding beside Content-Length, or in HTTP/1.0). `None`: answer 400.
pub fn body(version: Option<u8>, headers: &[httparse::Header]) -> Option<(Body, bool)> {
    let mut lengths = headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("content-length"));
    let codings: Vec<&[u8]> = headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("transfer-encoding"))
        .flat_map(|h| h.value.split(|&b| b == b','))
        .map(<[u8]>::trim_ascii)
        .filter(|c| !c.is_empty())
        .collect();
    let has_length = lengths.clone().next().is_some();
    if !codings.is_empty() {
        let chunked_last = codings.len() == 1 && codings[0].eq_ignore_ascii_case(b"chunked");
        return chunked_last.then_some((Body::Chunked, has_length || version != Some(1)));
    }
    let length = match (lengths.next(), lengths.next()) {
        (None, _) => 0,
        (Some(only), None) => digits(only.value.trim_ascii())?,
        (Some(_), Some(_)) => return None, // RFC 9110 §8.6 lets us refuse a repeat
    };
    Some((Body::Length(length), false))
}

/// A Content-Length value: 1*DIGIT, no sign, no list, no overflow.
fn digits(value: &[u8]) -> Option<usize> {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(value).ok()?.parse().ok()
}

/// The length of the chunked body at the start of `input`, its trailer section included:
/// `Ok(None)` while incomplete, `Err(())` when it breaks the chunked grammar (RFC 9112 §7.1).
pub fn chunked_len(input: &[u8]) -> Result<Option<usize>, ()> {
    let mut at = 0;
    loop {
        let Some(line) = crlf_line(&input[at..])? else {
            return Ok(None);
        };
        let size = chunk_size(line)?;
        at += line.len() + 2;
        if size == 0 {
            return trailers_len(&input[at..]).map(|end| end.map(|n| at + n));
        }
        let end = at.checked_add(size).ok_or(())?;
        if input.len() < end + 2 {
            return Ok(None);
        }
        if &input[end..end + 2] != b"\r\n" {
            return Err(());
        }
        at = end + 2;
    }
}

/// The line at the start of `input` without its CRLF; a bare CR or LF in it is an error.
fn crlf_line(input: &[u8]) -> Result<Option<&[u8]>, ()> {
    let Some(lf) = input.iter().position(|&b| b == b'\n') else {
        return if input.contains(&b'\r') && !input.ends_with(b"\r") {
            Err(())
        } else {
            Ok(None)
        };
    };
    let line = input[..lf].strip_suffix(b"\r").ok_or(())?;
    if line.contains(&b'\r') {
        return Err(());
    }
    Ok(Some(line))
}

/// chunk-size [ chunk-ext ]: 1 to 16 hex digits, then nothing or `;` extensions (ignored, RFC 9112 §7.1.1).
fn chunk_size(line: &[u8]) -> Result<usize, ()> {
    let hex = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if hex == 0 || hex > 16 {
        return Err(());
    }
    let extension = &line[hex..];
    let ext_ok = extension.is_empty()
        || (extension.trim_ascii_start().starts_with(b";")
            && extension
                .iter()
                .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b)));
    if !ext_ok {
        return Err(());
    }
    let text = std::str::from_utf8(&line[..hex]).map_err(|_| ())?;
    usize::from_str_radix(text, 16).map_err(|_| ())
}

/// The trailer section's length up to and including its empty line.
fn trailers_len(input: &[u8]) -> Result<Option<usize>, ()> {
    let mut at = 0;
    loop {
        let Some(line) = crlf_line(&input[at..])? else {
            return Ok(None);
        };
        at += line.len() + 2;
        if line.is_empty() {
            return Ok(Some(at));
        }
        if !line.contains(&b':') || line[0] == b' ' || line[0] == b'\t' {
            return Err(());
        }
    }
}

/// RFC 9112 §3.2: exactly one Host in HTTP/1.1 (at most one in HTTP/1.0), with a valid value.
pub fn host_ok(version: Option<u8>, headers: &[httparse::Header]) -> bool {
    let mut hosts = headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("host"));
    match (hosts.next(), hosts.next()) {
        (None, _) => version != Some(1),
        (Some(host), None) => valid_host(host.value),
        _ => false,
    }
}

/// uri-host [ ":" port ]: a reg-name or an IP literal; empty is allowed (an empty authority).
fn valid_host(value: &[u8]) -> bool {
    let (host, port) = match value.iter().rposition(|&b| b == b':') {
        Some(colon) if !value[colon..].contains(&b']') => (&value[..colon], &value[colon + 1..]),
        _ => (value, &b""[..]),
    };
    let reg_name = |b: &u8| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=%".contains(b);
    let literal = host.starts_with(b"[")
        && host.ends_with(b"]")
        && host[1..host.len() - 1]
            .iter()
            .all(|b| b.is_ascii_hexdigit() || *b == b':' || *b == b'.');
    port.iter().all(u8::is_ascii_digit) && (literal || host.iter().all(reg_name))
}

/// The path and query of an origin-form target, or of an absolute-form one (RFC 9112 §3.2.2: a
/// server MUST accept it).
pub fn origin_form(target: &str) -> &str {
    let lower = target.get(..8).unwrap_or(target).to_ascii_lowercase();
    let Some(rest) = ["http://", "https://"]
        .iter()
        .find(|scheme| lower.starts_with(*scheme))
        .map(|scheme| &target[scheme.len()..])
    else {
        return target;
    };
    rest.find('/').map_or("/", |slash| &rest[slash..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header<'a>(name: &'a str, value: &'a str) -> httparse::Header<'a> {
        httparse::Header {
            name,
            value: value.as_bytes(),
        }
    }

    #[test]
    fn content_length_is_digits_and_one_value() {
        assert_eq!(body(Some(1), &[]), Some((Body::Length(0), false)));
        assert_eq!(
            body(Some(1), &[header("Content-Length", " 5 ")]),
            Some((Body::Length(5), false))
        );
        for bad in [
            "x",
            "+5",
            "-5",
            "0x5",
            "",
            "5, 5",
            "99999999999999999999999",
        ] {
            assert_eq!(
                body(Some(1), &[header("Content-Length", bad)]),
                None,
                "{bad}"
            );
        }
        let twice = [header("Content-Length", "5"), header("Content-Length", "5")];
        assert_eq!(body(Some(1), &twice), None);
    }

    #[test]
    fn transfer_encoding_is_chunked_last_and_closes_beside_a_length() {
        let chunked = [header("Transfer-Encoding", "Chunked")];
        assert_eq!(body(Some(1), &chunked), Some((Body::Chunked, false)));
        assert_eq!(body(Some(0), &chunked), Some((Body::Chunked, true)));
        let both = [
            header("Transfer-Encoding", "chunked"),
            header("Content-Length", "3"),
        ];
        assert_eq!(body(Some(1), &both), Some((Body::Chunked, true)));
        for bad in ["chunked, gzip", "identity", "xchunked", "\"chunked\""] {
            assert_eq!(
                body(Some(1), &[header("Transfer-Encoding", bad)]),
                None,
                "{bad}"
            );
        }
    }

    #[test]
    fn chunked_bodies_end_where_the_grammar_says() {
        assert_eq!(chunked_len(b"5\r\nhello\r\n0\r\n\r\nGET"), Ok(Some(15)));
        assert_eq!(
            chunked_len(b"5;a=b\r\nhello\r\n0\r\nX: 1\r\n\r\n"),
            Ok(Some(25))
        );
        assert_eq!(chunked_len(b"5\r\nhello\r\n"), Ok(None));
        for bad in [
            &b"zz\r\n"[..],
            b" 5\r\n",
            b"5 \r\n",
            b"0x5\r\n",
            b"5\nhello\n",
            b"5\r\nhelloXX\r\n",
        ] {
            assert_eq!(chunked_len(bad), Err(()), "{bad:?}");
        }
        assert_eq!(chunked_len(b"FFFFFFFFFFFFFFFFFFFF\r\n"), Err(()));
    }

    #[test]
    fn host_is_one_valid_value() {
        assert!(host_ok(Some(1), &[header("Host", "probe:8080")]));
        assert!(host_ok(Some(1), &[header("Host", "[::1]:80")]));
        assert!(host_ok(Some(1), &[header("Host", "")]));
        assert!(host_ok(Some(0), &[]));
        assert!(!host_ok(Some(1), &[]));
        assert!(!host_ok(
            Some(1),
            &[header("Host", "a"), header("Host", "a")]
        ));
        for bad in ["pro be", "probe:port", "user@probe", "a, b"] {
            assert!(!host_ok(Some(1), &[header("Host", bad)]), "{bad}");
        }
    }

    #[test]
    fn absolute_form_is_routed_by_its_path() {
        assert_eq!(origin_form("/hello?x=1"), "/hello?x=1");
        assert_eq!(origin_form("http://probe/hello"), "/hello");
        assert_eq!(origin_form("HTTP://probe:80"), "/");
    }
}
