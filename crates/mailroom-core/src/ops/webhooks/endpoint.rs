//! Which URLs a webhook may post to: `https://` anywhere, `http://` only to this machine's
//! loopback (127.0.0.0/8, ::1, `localhost`), where nothing travels over a network.

use std::net::IpAddr;

use reqwest::Url;

use crate::error::{Error, Result};

/// The longest URL accepted.
pub const MAX_URL_BYTES: usize = 2048;

/// The URL `text` names, checked; an error names the `url` field and says what is allowed.
pub fn parse(text: &str) -> Result<Url> {
    let refuse = |why: String| {
        Error::invalid(format!(
            "url must be an https:// URL, or http:// to a loopback address (127.0.0.0/8, [::1], \
             localhost); {why}"
        ))
    };
    let text = text.trim();
    if text.len() > MAX_URL_BYTES {
        return Err(refuse(format!("got {} bytes (at most {MAX_URL_BYTES})", text.len())));
    }
    let url = Url::parse(text).map_err(|e| refuse(format!("{text:?} is not a URL ({e})")))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refuse("it must not carry a user name or password".to_owned()));
    }
    match url.scheme() {
        "https" if url.host_str().is_some() => Ok(url),
        "http" if url.host_str().is_some_and(is_loopback) => Ok(url),
        "http" => Err(refuse(format!("{text:?} is plain http:// to a host that is not loopback"))),
        scheme => Err(refuse(format!("{text:?} has the scheme {scheme:?}"))),
    }
}

/// Whether a URL's host (an IPv6 address in brackets) is this machine's loopback.
fn is_loopback(host: &str) -> bool {
    let address = host.trim_start_matches('[').trim_end_matches(']');
    match address.parse::<IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => host.eq_ignore_ascii_case("localhost"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_anywhere_http_only_to_loopback() {
        let check = |text: &str, accepted: bool| {
            let result = parse(text);
            assert_eq!(result.is_ok(), accepted, "{text}: {result:?}");
            if let Err(error) = result {
                assert!(error.message.starts_with("url must be"), "{}", error.message);
            }
        };
        check("https://hooks.example.com/mail?team=7", true);
        check("https://203.0.113.9:8443/in", true);
        check("http://127.0.0.1:9000/hook", true);
        check("http://127.8.9.10/hook", true);
        check("http://[::1]:9000/", true);
        check("http://localhost:9000/", true);
        check("http://LOCALHOST/", true);
        check("  https://hooks.example.com/  ", true);
        check("http://hooks.example.com/", false);
        check("http://10.0.0.1/", false);
        check("http://[::2]/", false);
        check("http://localhost.example.com/", false);
        check("ftp://127.0.0.1/", false);
        check("file:///etc/passwd", false);
        check("https://user:pass@hooks.example.com/", false);
        check("hooks.example.com/in", false);
        check("", false);
        check(&format!("https://hooks.example.com/{}", "a".repeat(MAX_URL_BYTES)), false);
    }
}
