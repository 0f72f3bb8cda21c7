//! Which URLs a webhook may post to, and which addresses it may reach: `https://` to a
//! public host, `http://` only to this machine's loopback (127.0.0.0/8, ::1, `localhost`),
//! where nothing travels over a network. An `https://` URL naming a private, loopback,
//! link-local, unique-local or unspecified address is refused, and so is a name that resolves
//! only to such addresses when the request is made ([`PublicResolver`]), so a webhook cannot
//! be pointed at a service inside the operator's network. `WEBHOOK_ALLOW_PRIVATE=true` lifts
//! both for an operator whose receivers live inside.

use std::net::{IpAddr, SocketAddr};

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::error::{Error, Result};

/// The longest URL accepted.
pub const MAX_URL_BYTES: usize = 2048;

/// The URL `text` names, checked (`allow_private`: `WEBHOOK_ALLOW_PRIVATE`); an error names
/// the `url` field and says what is allowed.
pub fn parse(text: &str, allow_private: bool) -> Result<Url> {
    let refuse = |why: String| {
        Error::invalid(format!(
            "url must be an https:// URL to a public host, or http:// to a loopback address \
             (127.0.0.0/8, [::1], localhost); {why}"
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
    let Some(host) = url.host_str() else {
        return Err(refuse(format!("{text:?} names no host")));
    };
    let inside = match host_ip(host) {
        Some(ip) => !is_public(ip),
        None => host.eq_ignore_ascii_case("localhost"),
    };
    match url.scheme() {
        "https" if inside && !allow_private => Err(refuse(format!(
            "{host} is not a public address (an operator may allow it: WEBHOOK_ALLOW_PRIVATE)"
        ))),
        "https" => Ok(url),
        "http" if is_loopback(host) => Ok(url),
        "http" => Err(refuse(format!("{text:?} is plain http:// to a host that is not loopback"))),
        scheme => Err(refuse(format!("{text:?} has the scheme {scheme:?}"))),
    }
}

/// The IP address a URL's host is (an IPv6 one in brackets), if it is one.
fn host_ip(host: &str) -> Option<IpAddr> {
    host.trim_start_matches('[').trim_end_matches(']').parse().ok()
}

/// Whether a URL's host is this machine's loopback.
fn is_loopback(host: &str) -> bool {
    match host_ip(host) {
        Some(ip) => ip.is_loopback(),
        None => host.eq_ignore_ascii_case("localhost"),
    }
}

/// Whether `ip` is an address of the public Internet: not private, loopback, link-local,
/// unique-local, shared (100.64.0.0/10), unspecified, broadcast or multicast; an IPv4 address
/// mapped into IPv6 is judged as itself.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [first, second, ..] = v4.octets();
            let shared = first == 100 && (64..128).contains(&second);
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || shared
                || first == 0)
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public(IpAddr::V4(v4)),
            None => {
                !(v6.is_loopback()
                    || v6.is_unspecified()
                    || v6.is_multicast()
                    || v6.is_unique_local()
                    || v6.is_unicast_link_local())
            }
        },
    }
}

/// The addresses `host` resolved to that a webhook may reach: public ones; loopback ones for
/// `localhost` (the loopback `http://` case: an `https://` URL to it is refused before);
/// every one with `allow_private`.
pub fn reachable(host: &str, found: Vec<SocketAddr>, allow_private: bool) -> Vec<SocketAddr> {
    let localhost = host.eq_ignore_ascii_case("localhost");
    let allowed = |ip: IpAddr| allow_private || is_public(ip) || (localhost && ip.is_loopback());
    found.into_iter().filter(|address| allowed(address.ip())).collect()
}

/// The webhook client's resolver: the system's, keeping only [`reachable`] addresses, so a
/// public-looking name that resolves inside is refused when the request is made.
#[derive(Debug, Clone, Copy)]
pub struct PublicResolver {
    pub allow_private: bool,
}

impl Resolve for PublicResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let (host, allow_private) = (name.as_str().to_owned(), self.allow_private);
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let kept = reachable(&host, found, allow_private);
            if kept.is_empty() {
                return Err(format!(
                    "{host} resolves to no public address (WEBHOOK_ALLOW_PRIVATE allows others)"
                )
                .into());
            }
            let addresses: Addrs = Box::new(kept.into_iter());
            Ok(addresses)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_to_public_hosts_http_only_to_loopback() {
        let check = |text: &str, allow_private: bool, accepted: bool| {
            let result = parse(text, allow_private);
            assert_eq!(result.is_ok(), accepted, "{text} ({allow_private}): {result:?}");
            if let Err(error) = result {
                assert!(error.message.starts_with("url must be"), "{}", error.message);
            }
        };
        for (text, accepted) in [
            ("https://hooks.example.com/mail?team=7", true),
            ("https://203.0.113.9:8443/in", true),
            ("https://[2001:db8::1]/in", true),
            ("http://127.0.0.1:9000/hook", true),
            ("http://127.8.9.10/hook", true),
            ("http://[::1]:9000/", true),
            ("http://localhost:9000/", true),
            ("http://LOCALHOST/", true),
            ("  https://hooks.example.com/  ", true),
            ("http://hooks.example.com/", false),
            ("http://10.0.0.1/", false),
            ("http://[::2]/", false),
            ("http://localhost.example.com/", false),
            ("ftp://127.0.0.1/", false),
            ("file:///etc/passwd", false),
            ("https://user:pass@hooks.example.com/", false),
            ("hooks.example.com/in", false),
            ("", false),
        ] {
            check(text, false, accepted);
        }
        let long = format!("https://hooks.example.com/{}", "a".repeat(MAX_URL_BYTES));
        check(&long, false, false);
        // Inside addresses over https://: refused, unless the operator allows them.
        for inside in [
            "https://127.0.0.1/",
            "https://localhost/",
            "https://10.1.2.3/",
            "https://172.16.0.1/",
            "https://192.168.1.1/",
            "https://169.254.169.254/latest/meta-data",
            "https://100.64.0.1/",
            "https://0.0.0.0/",
            "https://[::1]/",
            "https://[::]/",
            "https://[fd00::1]/",
            "https://[fe80::1]/",
            "https://[::ffff:10.0.0.1]/",
        ] {
            check(inside, false, false);
            check(inside, true, true);
        }
        check("http://10.0.0.1/", true, false);
    }

    #[test]
    fn resolved_addresses_keep_only_what_a_webhook_may_reach() {
        let address = |text: &str| -> SocketAddr { text.parse().expect("address") };
        let found = || vec![address("10.0.0.5:0"), address("93.184.216.34:0"), address("[::1]:0")];
        assert_eq!(reachable("hooks.example.com", found(), false), [address("93.184.216.34:0")]);
        assert_eq!(reachable("hooks.example.com", found(), true).len(), 3);
        assert!(reachable("inside.example.com", vec![address("192.168.0.9:0")], false).is_empty());
        let loopback = vec![address("127.0.0.1:0"), address("[::1]:0")];
        assert_eq!(reachable("localhost", loopback.clone(), false), loopback);
        assert!(reachable("sneaky.example.com", loopback, false).is_empty());
    }

    #[tokio::test]
    async fn the_resolver_lets_localhost_reach_loopback() {
        let resolver = PublicResolver { allow_private: false };
        let found = resolver.resolve("localhost".parse().expect("name")).await.expect("resolved");
        assert!(found.into_iter().all(|a| a.ip().is_loopback()));
    }
}
