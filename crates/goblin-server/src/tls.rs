//! TLS, as Redis's tls.c configures it, with rustls (ring provider).
//!
//! [`TlsContext::load`] reads the tls-* parameters the way Redis's
//! tlsConfigure does: the certificate chain and key (tls-key-file-pass
//! decrypts a PKCS#8 encrypted key), the CA certificates that client
//! certificates must chain to, the protocols, the TLS 1.2 ciphers (OpenSSL
//! cipher strings) and TLS 1.3 ciphersuites, server cipher preference and
//! the session cache. A failure is Redis's log line; the caller keeps the
//! context it had. The client certificate (tls-client-cert-file and its
//! key) is loaded and checked as Redis builds its client context, though
//! goblin-server makes no outgoing connections.
//!
//! A context holds one rustls `ServerConfig` per tls-auth-clients mode
//! (read by each new connection, as Redis does): `no` asks for no
//! certificate, `optional` verifies one when given, `yes` requires one.
//!
//! rustls differs from OpenSSL where it has no support: TLSv1 and TLSv1.1
//! (accepted in tls-protocols, never negotiated), CBC and static-RSA
//! cipher suites (an OpenSSL cipher string that names only those is
//! refused), finite-field Diffie-Hellman (tls-dh-params-file is read and
//! checked, key exchange is ECDHE), and traditional "Proc-Type: 4,ENCRYPTED"
//! key files (refused: `openssl pkcs8 -topk8` converts them).

use goblin_engine::Config;
use rustls::crypto::ring::cipher_suite as cs;
use rustls::crypto::CryptoProvider;
use rustls::server::{ServerConfig, StoresServerSessions, WebPkiClientVerifier};
use rustls::{RootCertStore, SupportedCipherSuite};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// tls-auth-clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAuth {
    No,
    Yes,
    Optional,
}

impl ClientAuth {
    pub fn from_config(config: &Config) -> ClientAuth {
        match config.tls_auth_clients().as_str() {
            "no" => ClientAuth::No,
            "optional" => ClientAuth::Optional,
            // Also the fail-secure default, as in Redis.
            _ => ClientAuth::Yes,
        }
    }
}

/// A loaded TLS configuration: what a TLS listener hands each handshake.
pub struct TlsContext {
    no_auth: Arc<ServerConfig>,
    /// With CA certificates: (optional, required) client verification.
    verifying: Option<(Arc<ServerConfig>, Arc<ServerConfig>)>,
}

impl TlsContext {
    /// The rustls configuration for a new connection under `auth`; None
    /// when client certificates are wanted but no CA certificates are
    /// configured to verify them (no client can then be accepted).
    pub fn server_config(&self, auth: ClientAuth) -> Option<Arc<ServerConfig>> {
        match (auth, &self.verifying) {
            (ClientAuth::No, _) => Some(self.no_auth.clone()),
            (ClientAuth::Optional, Some((optional, _))) => Some(optional.clone()),
            (ClientAuth::Yes, Some((_, required))) => Some(required.clone()),
            (_, None) => None,
        }
    }

    /// Redis's tlsConfigure: the context the configuration describes, or
    /// the log line that says why there is none.
    pub fn load(config: &Config) -> Result<TlsContext, String> {
        let opt = |value: String| Some(value).filter(|v| !v.is_empty());
        let Some(cert_file) = opt(config.tls_cert_file()) else {
            return Err("No tls-cert-file configured!".into());
        };
        let Some(key_file) = opt(config.tls_key_file()) else {
            return Err("No tls-key-file configured!".into());
        };
        let (ca_file, ca_dir) = (
            opt(config.tls_ca_cert_file()),
            opt(config.tls_ca_cert_dir()),
        );
        let auth = ClientAuth::from_config(config);
        if (auth != ClientAuth::No || config.tls_cluster() || config.tls_replication())
            && ca_file.is_none()
            && ca_dir.is_none()
        {
            return Err("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!".into());
        }
        let versions = protocols(&config.tls_protocols())?;
        // Both lists are checked whatever the protocols, as OpenSSL sets
        // both on the context.
        let ciphers = opt(config.tls_ciphers());
        let tls12 = tls12_suites(ciphers.as_deref().unwrap_or("DEFAULT")).ok_or_else(|| {
            format!(
                "Failed to configure ciphers: {}",
                ciphers.unwrap_or_default()
            )
        })?;
        let ciphersuites = opt(config.tls_ciphersuites());
        let tls13 = tls13_suites(ciphersuites.as_deref()).ok_or_else(|| {
            format!(
                "Failed to configure ciphersuites: {}",
                ciphersuites.unwrap_or_default()
            )
        })?;
        let mut suites = Vec::new();
        if versions.contains(&&rustls::version::TLS13) {
            suites.extend(tls13);
        }
        if versions.contains(&&rustls::version::TLS12) {
            suites.extend(tls12);
        }
        let provider = Arc::new(CryptoProvider {
            cipher_suites: suites,
            ..rustls::crypto::ring::default_provider()
        });

        let chain = load_certs(&cert_file)
            .map_err(|e| format!("Failed to load certificate: {cert_file}: {e}"))?;
        let key = load_key(&key_file, opt(config.tls_key_file_pass()).as_deref())
            .map_err(|e| format!("Failed to load private key: {key_file}: {e}"))?;
        let roots = match (&ca_file, &ca_dir) {
            (None, None) => None,
            _ => Some(Arc::new(
                load_roots(ca_file.as_deref(), ca_dir.as_deref()).map_err(|e| {
                    format!("Failed to configure CA certificate(s) file/directory: {e}")
                })?,
            )),
        };
        if let Some(dh) = opt(config.tls_dh_params_file()) {
            check_dh_params(&dh)?;
        }
        // Redis builds a client context when a client certificate is
        // configured, and fails as a whole when it does not load.
        if let (Some(cert), Some(key)) = (
            opt(config.tls_client_cert_file()),
            opt(config.tls_client_key_file()),
        ) {
            load_certs(&cert).map_err(|e| format!("Failed to load certificate: {cert}: {e}"))?;
            load_key(&key, opt(config.tls_client_key_file_pass()).as_deref())
                .map_err(|e| format!("Failed to load private key: {key}: {e}"))?;
        }

        let sessions = config.tls_session_caching().then(|| {
            Arc::new(SessionCache::new(
                config.tls_session_cache_size().max(0) as usize,
                Duration::from_secs(config.tls_session_cache_timeout().max(0) as u64),
            ))
        });
        let prefer_server = config.tls_prefer_server_ciphers();
        let build = |verifier: Option<Arc<dyn rustls::server::danger::ClientCertVerifier>>| {
            let builder = ServerConfig::builder_with_provider(provider.clone())
                .with_protocol_versions(&versions)
                .map_err(|e| format!("Failed to configure protocols: {e}"))?;
            let builder = match verifier {
                Some(v) => builder.with_client_cert_verifier(v),
                None => builder.with_no_client_auth(),
            };
            let mut server = builder
                .with_single_cert(chain.clone(), key.clone_key())
                .map_err(|e| format!("Failed to load private key: {key_file}: {e}"))?;
            server.ignore_client_order = prefer_server;
            match &sessions {
                Some(cache) => server.session_storage = cache.clone(),
                None => {
                    server.session_storage = Arc::new(rustls::server::NoServerSessionStorage {})
                }
            }
            // Stateful resumption only (the cache above), as OpenSSL's
            // server cache; no session tickets.
            server.send_tls13_tickets = if sessions.is_some() { 1 } else { 0 };
            Ok::<_, String>(Arc::new(server))
        };
        let no_auth = build(None)?;
        let verifying = match roots {
            None => None,
            Some(roots) => {
                let verifier = |optional: bool| {
                    let b = WebPkiClientVerifier::builder_with_provider(
                        roots.clone(),
                        provider.clone(),
                    );
                    let b = if optional {
                        b.allow_unauthenticated()
                    } else {
                        b
                    };
                    b.build().map_err(|e| {
                        format!("Failed to configure CA certificate(s) file/directory: {e}")
                    })
                };
                Some((
                    build(Some(verifier(true)?))?,
                    build(Some(verifier(false)?))?,
                ))
            }
        };
        Ok(TlsContext { no_auth, verifying })
    }
}

/// Redis's parseProtocolsConfig: a space-separated list of TLSv1,
/// TLSv1.1, TLSv1.2 and TLSv1.3 (any case); none means TLSv1.2 and
/// TLSv1.3. rustls speaks only the last two.
fn protocols(text: &str) -> Result<Vec<&'static rustls::SupportedProtocolVersion>, String> {
    let mut versions = Vec::new();
    if text.is_empty() {
        return Ok(vec![&rustls::version::TLS13, &rustls::version::TLS12]);
    }
    let mut any = false;
    for token in text.split(' ') {
        match token.to_ascii_lowercase().as_str() {
            "tlsv1" | "tlsv1.1" => any = true,
            "tlsv1.2" => versions.push(&rustls::version::TLS12),
            "tlsv1.3" => versions.insert(0, &rustls::version::TLS13),
            _ => {
                return Err("Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.".into())
            }
        }
    }
    if versions.is_empty() {
        return Err(if any {
            "tls-protocols names only TLSv1 or TLSv1.1, which this server does not support: add TLSv1.2 or TLSv1.3.".into()
        } else {
            "Invalid tls-protocols configuration string".into()
        });
    }
    Ok(versions)
}

/// What an OpenSSL cipher string can select a TLS 1.2 suite by.
struct Tls12Suite {
    name: &'static str,
    suite: SupportedCipherSuite,
    /// The aliases that match it (OpenSSL's names for key exchange,
    /// authentication, encryption, MAC and strength classes).
    aliases: &'static [&'static str],
}

const COMMON: &[&str] = &[
    "ALL", "DEFAULT", "HIGH", "ECDHE", "EECDH", "KECDHE", "KEECDH", "AEAD", "TLSV1.2", "FIPS",
];

/// The TLS 1.2 suites rustls has, in OpenSSL's DEFAULT order.
fn tls12_table() -> [Tls12Suite; 6] {
    [
        Tls12Suite {
            name: "ECDHE-ECDSA-AES256-GCM-SHA384",
            suite: cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            aliases: &["AECDSA", "ECDSA", "AES", "AES256", "AESGCM", "SHA384"],
        },
        Tls12Suite {
            name: "ECDHE-RSA-AES256-GCM-SHA384",
            suite: cs::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
            aliases: &["ARSA", "RSA", "AES", "AES256", "AESGCM", "SHA384"],
        },
        Tls12Suite {
            name: "ECDHE-ECDSA-CHACHA20-POLY1305",
            suite: cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
            aliases: &["AECDSA", "ECDSA", "CHACHA20", "SHA256"],
        },
        Tls12Suite {
            name: "ECDHE-RSA-CHACHA20-POLY1305",
            suite: cs::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
            aliases: &["ARSA", "RSA", "CHACHA20", "SHA256"],
        },
        Tls12Suite {
            name: "ECDHE-ECDSA-AES128-GCM-SHA256",
            suite: cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            aliases: &["AECDSA", "ECDSA", "AES", "AES128", "AESGCM", "SHA256"],
        },
        Tls12Suite {
            name: "ECDHE-RSA-AES128-GCM-SHA256",
            suite: cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
            aliases: &["ARSA", "RSA", "AES", "AES128", "AESGCM", "SHA256"],
        },
    ]
}

/// The TLS 1.2 suites an OpenSSL cipher list selects, in its order (see
/// ciphers(1)): elements separated by ':', ',' or spaces, each a suite
/// name or an alias, or several joined by '+' (all must match); '!'
/// removes for good, '-' removes (a later element may add back), '+'
/// moves to the end; "@STRENGTH" and "@SECLEVEL=n" change nothing here.
/// Names of suites rustls lacks select nothing, as OpenSSL ignores names
/// it does not know; None when nothing is selected (OpenSSL's error).
pub fn tls12_suites(list: &str) -> Option<Vec<SupportedCipherSuite>> {
    let table = tls12_table();
    let mut chosen: Vec<usize> = Vec::new();
    let mut banned: Vec<usize> = Vec::new();
    for element in list.split([':', ',', ' ']).filter(|e| !e.is_empty()) {
        let (op, body) = match element.as_bytes()[0] {
            b'!' | b'-' | b'+' => (element.as_bytes()[0], &element[1..]),
            _ => (0, element),
        };
        if body.starts_with('@') {
            continue;
        }
        let matching: Vec<usize> = (0..table.len())
            .filter(|&i| {
                body.split('+').all(|part| {
                    let upper = part.to_ascii_uppercase();
                    table[i].name.eq_ignore_ascii_case(part)
                        || table[i].aliases.contains(&upper.as_str())
                        || COMMON.contains(&upper.as_str())
                })
            })
            .collect();
        match op {
            b'!' => {
                chosen.retain(|i| !matching.contains(i));
                banned.extend(matching);
            }
            b'-' => chosen.retain(|i| !matching.contains(i)),
            b'+' => {
                let moved: Vec<usize> = chosen
                    .iter()
                    .copied()
                    .filter(|i| matching.contains(i))
                    .collect();
                chosen.retain(|i| !matching.contains(i));
                chosen.extend(moved);
            }
            _ => {
                for i in matching {
                    if !chosen.contains(&i) && !banned.contains(&i) {
                        chosen.push(i);
                    }
                }
            }
        }
    }
    if chosen.is_empty() {
        return None;
    }
    Some(chosen.into_iter().map(|i| table[i].suite).collect())
}

/// The TLS 1.3 suites of an OpenSSL ciphersuites list (names separated by
/// ':'; unknown names are ignored, as OpenSSL does). None when a list is
/// given and none of its names is one rustls has. Unset: OpenSSL's
/// default order.
pub fn tls13_suites(list: Option<&str>) -> Option<Vec<SupportedCipherSuite>> {
    let table = [
        ("TLS_AES_256_GCM_SHA384", cs::TLS13_AES_256_GCM_SHA384),
        (
            "TLS_CHACHA20_POLY1305_SHA256",
            cs::TLS13_CHACHA20_POLY1305_SHA256,
        ),
        ("TLS_AES_128_GCM_SHA256", cs::TLS13_AES_128_GCM_SHA256),
    ];
    let Some(list) = list else {
        return Some(table.iter().map(|(_, s)| *s).collect());
    };
    let mut out: Vec<SupportedCipherSuite> = Vec::new();
    for name in list.split(':') {
        if let Some((_, s)) = table.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
            if !out.iter().any(|o| o.suite() == s.suite()) {
                out.push(*s);
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

/// A PEM file's certificates (a chain: the certificate first).
fn load_certs(path: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(pem_error)?
        .collect::<Result<_, _>>()
        .map_err(pem_error)?;
    if certs.is_empty() {
        return Err("no certificate in the file".into());
    }
    Ok(certs)
}

fn pem_error(e: rustls_pki_types::pem::Error) -> String {
    match e {
        rustls_pki_types::pem::Error::Io(e) => e.to_string(),
        e => format!("bad PEM file: {e:?}"),
    }
}

/// A PEM private key: PKCS#8, PKCS#1 (RSA) or SEC1 (EC), or PKCS#8
/// encrypted with a password (PBES2, what OpenSSL 3 writes).
fn load_key(path: &str, password: Option<&str>) -> Result<PrivateKeyDer<'static>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        let Some(password) = password else {
            return Err("the key is encrypted and no password is configured".into());
        };
        let (_, document) = pkcs8::SecretDocument::from_pem(text.trim_start())
            .map_err(|e| format!("bad encrypted key: {e}"))?;
        let encrypted = pkcs8::EncryptedPrivateKeyInfo::try_from(document.as_bytes())
            .map_err(|e| format!("bad encrypted key: {e}"))?;
        let plain = encrypted
            .decrypt(password)
            .map_err(|_| "bad decrypt (wrong password or unsupported encryption)".to_string())?;
        return Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            plain.as_bytes().to_vec(),
        )));
    }
    if text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err("traditional encrypted PEM keys are not supported: convert the key to PKCS#8 (openssl pkcs8 -topk8)".into());
    }
    PrivateKeyDer::from_pem_slice(text.as_bytes()).map_err(|e| match e {
        rustls_pki_types::pem::Error::NoItemsFound => "no private key in the file".to_string(),
        e => pem_error(e),
    })
}

/// The CA certificates of tls-ca-cert-file and of every PEM file in
/// tls-ca-cert-dir (OpenSSL looks up hashed names there; reading them all
/// trusts the same set).
fn load_roots(file: Option<&str>, dir: Option<&str>) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    if let Some(file) = file {
        for cert in load_certs(file).map_err(|e| format!("{file}: {e}"))? {
            roots
                .add(cert)
                .map_err(|e| format!("{file}: bad CA certificate: {e}"))?;
        }
    }
    if let Some(dir) = dir {
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{dir}: {e}"))?;
        for entry in entries.flatten() {
            if let Ok(certs) = load_certs(&entry.path().to_string_lossy()) {
                for cert in certs {
                    let _ = roots.add(cert);
                }
            }
        }
    }
    if roots.is_empty() {
        return Err("no CA certificate found".into());
    }
    Ok(roots)
}

/// tls-dh-params-file: read and checked as Redis reads it (a PEM "DH
/// PARAMETERS" block). rustls negotiates ECDHE only, so the parameters are
/// not used.
fn check_dh_params(path: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("Failed to load {path}: {e}"))?;
    let begin = "-----BEGIN DH PARAMETERS-----";
    match text.find(begin) {
        Some(at) if text[at..].contains("-----END DH PARAMETERS-----") => Ok(()),
        _ => Err(format!("{path}: failed to read DH params.")),
    }
}

/// The server's session cache (OpenSSL's SSL_SESS_CACHE_SERVER, as Redis
/// sets it up): at most tls-session-cache-size sessions (0: OpenSSL's
/// "no limit", kept here at the default 20480 so that memory stays
/// bounded), each resumable for tls-session-cache-timeout seconds. When
/// full, the oldest session goes.
#[derive(Debug)]
struct SessionCache {
    size: usize,
    timeout: Duration,
    inner: Mutex<Sessions>,
}

#[derive(Debug, Default)]
struct Sessions {
    map: HashMap<Vec<u8>, (Vec<u8>, Instant)>,
    order: VecDeque<Vec<u8>>,
}

impl SessionCache {
    fn new(size: usize, timeout: Duration) -> SessionCache {
        SessionCache {
            size: if size == 0 { 20 * 1024 } else { size },
            timeout,
            inner: Mutex::new(Sessions::default()),
        }
    }

    fn fresh(&self, stored: Instant) -> bool {
        stored.elapsed() < self.timeout
    }
}

impl StoresServerSessions for SessionCache {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if s.map.insert(key.clone(), (value, Instant::now())).is_none() {
            s.order.push_back(key);
        }
        while s.map.len() > self.size {
            let Some(oldest) = s.order.pop_front() else {
                break;
            };
            s.map.remove(&oldest);
        }
        // Keys removed by take() may linger in the order: drop them now
        // and then so that it stays the map's size.
        if s.order.len() > 2 * s.map.len() + 16 {
            let Sessions { map, order } = &mut *s;
            order.retain(|k| map.contains_key(k));
        }
        true
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        let s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        s.map
            .get(key)
            .filter(|(_, at)| self.fresh(*at))
            .map(|(v, _)| v.clone())
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        s.map
            .remove(key)
            .filter(|(_, at)| self.fresh(*at))
            .map(|(v, _)| v)
    }

    fn can_cache(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &str) -> Option<Vec<String>> {
        tls12_suites(list).map(|v| {
            v.iter()
                .map(|s| format!("{:?}", s.suite()))
                .collect::<Vec<_>>()
        })
    }

    #[test]
    fn openssl_cipher_strings() {
        assert_eq!(names("DEFAULT").unwrap().len(), 6);
        // A suite rustls lacks removes nothing.
        assert_eq!(names("DEFAULT:-AES128-SHA256").unwrap().len(), 6);
        // Only suites rustls lacks: refused.
        assert!(names("AES128-SHA256:AES256-SHA256").is_none());
        assert!(names("-ALL:AES128-SHA256").is_none());
        assert_eq!(
            names("ECDHE-RSA-AES128-GCM-SHA256").unwrap(),
            ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]
        );
        assert_eq!(
            names("HIGH:!ECDSA:!CHACHA20").unwrap(),
            [
                "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
            ]
        );
        assert_eq!(
            names("ECDHE+AESGCM+aRSA:+AES256").unwrap(),
            [
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"
            ]
        );
        assert!(names("").is_none());
    }

    #[test]
    fn openssl_ciphersuites() {
        assert_eq!(tls13_suites(None).unwrap().len(), 3);
        assert_eq!(
            tls13_suites(Some("TLS_AES_128_GCM_SHA256:NOPE"))
                .unwrap()
                .len(),
            1
        );
        assert!(tls13_suites(Some("TLS_AES_128_CCM_SHA256")).is_none());
    }

    #[test]
    fn protocol_lists() {
        assert_eq!(protocols("").unwrap().len(), 2);
        assert_eq!(protocols("TLSv1.2").unwrap(), [&rustls::version::TLS12]);
        assert_eq!(protocols("tlsv1.3").unwrap(), [&rustls::version::TLS13]);
        assert!(protocols("TLSv1.1").is_err());
        assert!(protocols("TLSv1.4")
            .unwrap_err()
            .starts_with("Invalid tls-protocols"));
    }

    #[test]
    fn session_cache_bounds_and_expiry() {
        let c = SessionCache::new(2, Duration::from_secs(300));
        for k in 0u8..5 {
            c.put(vec![k], vec![k]);
        }
        assert_eq!(c.get(&[4]), Some(vec![4]));
        assert_eq!(c.get(&[0]), None);
        assert!(c.inner.lock().unwrap().map.len() <= 2);
        let expired = SessionCache::new(2, Duration::ZERO);
        expired.put(vec![1], vec![1]);
        assert_eq!(expired.get(&[1]), None);
    }
}
