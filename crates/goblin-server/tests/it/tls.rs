//! TLS: tls-port beside port, client certificates per tls-auth-clients,
//! CONFIG SET of tls-* (the context reloaded for new connections, the old
//! one kept when the new one does not load), tls-protocols and the cipher
//! settings, plain-text clients on the TLS port, and Debian's redis-cli
//! --tls against Goblin. Certificates are made at test time (rcgen); the
//! client is rustls over a blocking socket.

use crate::common::{wait_until, TestServer};
use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A CA and certificates it signed, written as PEM files into a directory.
struct Pki {
    dir: PathBuf,
    ca: rcgen::Certificate,
    ca_key: KeyPair,
}

/// A certificate and its key: DER for the client, files for the server.
struct Issued {
    cert: CertificateDer<'static>,
    key: PrivatePkcs8KeyDer<'static>,
    cert_file: String,
    key_file: String,
}

impl Pki {
    fn new(name: &str) -> Pki {
        let dir = std::env::temp_dir().join(format!(
            "goblin-tls-{name}-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let ca_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, format!("{name} CA"));
        let ca = params.self_signed(&ca_key).unwrap();
        std::fs::write(dir.join("ca.crt"), ca.pem()).unwrap();
        Pki { dir, ca, ca_key }
    }

    fn ca_file(&self) -> String {
        self.dir.join("ca.crt").display().to_string()
    }

    /// A certificate for `name` (a server's for 127.0.0.1, or a client's).
    fn issue(&self, name: &str, server: bool) -> Issued {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(if server {
            vec!["localhost".to_string(), "127.0.0.1".to_string()]
        } else {
            Vec::new()
        })
        .unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![if server {
            ExtendedKeyUsagePurpose::ServerAuth
        } else {
            ExtendedKeyUsagePurpose::ClientAuth
        }];
        let cert = params.signed_by(&key, &self.ca, &self.ca_key).unwrap();
        let cert_file = self.dir.join(format!("{name}.crt"));
        let key_file = self.dir.join(format!("{name}.key"));
        std::fs::write(&cert_file, cert.pem()).unwrap();
        std::fs::write(&key_file, key.serialize_pem()).unwrap();
        Issued {
            cert: cert.der().clone(),
            key: PrivatePkcs8KeyDer::from(key.serialize_der()),
            cert_file: cert_file.display().to_string(),
            key_file: key_file.display().to_string(),
        }
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A port of this test band free now (each test takes its own ports).
fn free_port() -> u16 {
    static NEXT: AtomicU16 = AtomicU16::new(0);
    for _ in 0..50 {
        let port = 7400 + NEXT.fetch_add(1, Ordering::Relaxed) % 50;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in 7400-7449");
}

static TLS12_ONLY: &[&rustls::SupportedProtocolVersion] = &[&rustls::version::TLS12];
static TLS13_ONLY: &[&rustls::SupportedProtocolVersion] = &[&rustls::version::TLS13];

/// What a TLS client offers.
struct Client<'a> {
    roots: &'a Pki,
    identity: Option<&'a Issued>,
    versions: &'static [&'static rustls::SupportedProtocolVersion],
    suites: Option<Vec<rustls::SupportedCipherSuite>>,
}

impl<'a> Client<'a> {
    fn new(roots: &'a Pki, identity: Option<&'a Issued>) -> Client<'a> {
        Client {
            roots,
            identity,
            versions: rustls::ALL_VERSIONS,
            suites: None,
        }
    }

    /// Connects, and returns the connection once the handshake is done
    /// (with TLS 1.3 a refused client certificate shows at the first
    /// read).
    fn connect(&self, port: u16) -> std::io::Result<Tls> {
        let mut provider = rustls::crypto::ring::default_provider();
        if let Some(suites) = &self.suites {
            provider.cipher_suites = suites.clone();
        }
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.roots.ca.der().clone()).unwrap();
        let builder = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
            .with_protocol_versions(self.versions)
            .unwrap()
            .with_root_certificates(roots);
        let config = match self.identity {
            Some(id) => builder
                .with_client_auth_cert(
                    vec![id.cert.clone()],
                    PrivateKeyDer::Pkcs8(id.key.clone_key()),
                )
                .unwrap(),
            None => builder.with_no_client_auth(),
        };
        let name = ServerName::IpAddress(std::net::IpAddr::from([127, 0, 0, 1]).into());
        let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        let tcp = TcpStream::connect(("127.0.0.1", port))?;
        tcp.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut tls = rustls::StreamOwned::new(conn, tcp);
        while tls.conn.is_handshaking() {
            tls.conn.complete_io(&mut tls.sock)?;
        }
        Ok(Tls(tls))
    }
}

struct Tls(rustls::StreamOwned<rustls::ClientConnection, TcpStream>);

impl Tls {
    /// Sends a command and reads one reply line (or bulk, small).
    fn call(&mut self, request: &str) -> std::io::Result<String> {
        self.0.write_all(request.as_bytes())?;
        self.0.flush()?;
        let mut buf = [0u8; 4096];
        let n = self.0.read(&mut buf)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
    }

    fn ping(&mut self) -> std::io::Result<String> {
        self.call("PING\r\n")
    }

    /// The server's certificate.
    fn peer(&self) -> CertificateDer<'static> {
        self.0.conn.peer_certificates().unwrap()[0].clone()
    }

    fn suite(&self) -> rustls::CipherSuite {
        self.0.conn.negotiated_cipher_suite().unwrap().suite()
    }
}

/// Whether a client gets PONG.
fn pongs(client: &Client, port: u16) -> bool {
    matches!(client.connect(port).and_then(|mut c| c.ping()), Ok(r) if r == "+PONG\r\n")
}

/// A server listening for TLS clients only (port 0) on a port of the band,
/// with the server certificate `server` and the CA of `pki`.
fn start(pki: &Pki, server: &Issued, extra: &[(&str, &str)]) -> (TestServer, u16) {
    let tls_port = free_port();
    let port = tls_port.to_string();
    let ca = pki.ca_file();
    let mut directives = vec![
        ("tls-port", port.as_str()),
        ("tls-cert-file", server.cert_file.as_str()),
        ("tls-key-file", server.key_file.as_str()),
        ("tls-ca-cert-file", ca.as_str()),
    ];
    directives.extend_from_slice(extra);
    (TestServer::start_with(&directives), tls_port)
}

/// CONFIG SET over a TLS connection; the reply line.
fn config_set(c: &mut Tls, name: &str, value: &str) -> String {
    c.call(&format!(
        "*4\r\n$6\r\nCONFIG\r\n$3\r\nSET\r\n${}\r\n{name}\r\n${}\r\n{value}\r\n",
        name.len(),
        value.len()
    ))
    .unwrap()
}

#[test]
fn tls_handshake_and_ping() {
    let pki = Pki::new("ping");
    let server = pki.issue("server", true);
    let client = pki.issue("client", false);
    let (s, port) = start(&pki, &server, &[]);
    let mut c = Client::new(&pki, Some(&client)).connect(port).unwrap();
    assert_eq!(c.ping().unwrap(), "+PONG\r\n");
    assert_eq!(c.call("SET k v\r\n").unwrap(), "+OK\r\n");
    assert_eq!(c.call("GET k\r\n").unwrap(), "$1\r\nv\r\n");
    // INFO's tcp_port is the TLS port when there is no plain one.
    let info = c.call("INFO server\r\n").unwrap();
    assert!(info.contains(&format!("tcp_port:{port}\r\n")), "{info}");
    // The same client list as plain clients.
    let list = c.call("CLIENT LIST\r\n").unwrap();
    assert!(list.contains("cmd=client|list"), "{list}");
    drop(s);
}

/// Replies larger than what the socket takes at once (TLS records that
/// wait for the socket) and a long pipeline arrive whole and in order.
#[test]
fn tls_large_replies_and_pipelines() {
    let pki = Pki::new("large");
    let server = pki.issue("server", true);
    let client = pki.issue("client", false);
    let (_s, port) = start(&pki, &server, &[]);
    let mut c = Client::new(&pki, Some(&client)).connect(port).unwrap();
    let value = "x".repeat(3 << 20);
    let set = format!(
        "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n${}\r\n{value}\r\n",
        value.len()
    );
    c.0.write_all(set.as_bytes()).unwrap();
    let mut ok = [0u8; 5];
    c.0.read_exact(&mut ok).unwrap();
    assert_eq!(&ok, b"+OK\r\n");
    let mut pipeline = String::new();
    for _ in 0..3 {
        pipeline.push_str("GET big\r\n");
    }
    for i in 0..1000 {
        pipeline.push_str(&format!("ECHO {i}\r\n"));
    }
    c.0.write_all(pipeline.as_bytes()).unwrap();
    let header = format!("${}\r\n", value.len());
    let mut expected = Vec::new();
    for _ in 0..3 {
        expected.extend_from_slice(header.as_bytes());
        expected.extend_from_slice(value.as_bytes());
        expected.extend_from_slice(b"\r\n");
    }
    for i in 0..1000 {
        let s = i.to_string();
        expected.extend_from_slice(format!("${}\r\n{s}\r\n", s.len()).as_bytes());
    }
    let mut got = vec![0u8; expected.len()];
    c.0.read_exact(&mut got).unwrap();
    assert!(got == expected, "replies differ");
}

#[test]
fn tls_auth_clients_yes_optional_no() {
    let pki = Pki::new("auth");
    let server = pki.issue("server", true);
    let client = pki.issue("client", false);
    let other = Pki::new("other");
    let stranger = other.issue("stranger", false);
    let (_s, port) = start(&pki, &server, &[]);
    // yes (the default): a certificate signed by the CA is required.
    assert!(pongs(&Client::new(&pki, Some(&client)), port));
    assert!(!pongs(&Client::new(&pki, None), port));
    assert!(!pongs(&Client::new(&pki, Some(&stranger)), port));
    let mut admin = Client::new(&pki, Some(&client)).connect(port).unwrap();
    // optional: none is fine, one given is verified.
    assert_eq!(
        config_set(&mut admin, "tls-auth-clients", "optional"),
        "+OK\r\n"
    );
    assert!(pongs(&Client::new(&pki, None), port));
    assert!(pongs(&Client::new(&pki, Some(&client)), port));
    assert!(!pongs(&Client::new(&pki, Some(&stranger)), port));
    // no: not even asked for.
    assert_eq!(config_set(&mut admin, "tls-auth-clients", "no"), "+OK\r\n");
    assert!(pongs(&Client::new(&pki, None), port));
    assert!(pongs(&Client::new(&pki, Some(&stranger)), port));
    assert_eq!(config_set(&mut admin, "tls-auth-clients", "yes"), "+OK\r\n");
    assert!(!pongs(&Client::new(&pki, None), port));
}

#[test]
fn config_set_tls_cert_file_reloads_for_new_connections() {
    let pki = Pki::new("reload");
    let first = pki.issue("first", true);
    let second = pki.issue("second", true);
    let client = pki.issue("client", false);
    let (_s, port) = start(&pki, &first, &[]);
    let mut old = Client::new(&pki, Some(&client)).connect(port).unwrap();
    assert_eq!(old.peer(), first.cert);
    let reply = old
        .call(&format!(
            "*6\r\n$6\r\nCONFIG\r\n$3\r\nSET\r\n$13\r\ntls-cert-file\r\n${}\r\n{}\r\n$12\r\ntls-key-file\r\n${}\r\n{}\r\n",
            second.cert_file.len(),
            second.cert_file,
            second.key_file.len(),
            second.key_file
        ))
        .unwrap();
    assert_eq!(reply, "+OK\r\n");
    let mut new = Client::new(&pki, Some(&client)).connect(port).unwrap();
    assert_eq!(new.peer(), second.cert);
    assert_eq!(new.ping().unwrap(), "+PONG\r\n");
    // The connection made before keeps going.
    assert_eq!(old.ping().unwrap(), "+PONG\r\n");
    // The same path again reads the file again: a certificate renewed in
    // place is served.
    std::fs::copy(&first.cert_file, &second.cert_file).unwrap();
    std::fs::copy(&first.key_file, &second.key_file).unwrap();
    assert_eq!(
        config_set(&mut old, "tls-cert-file", &second.cert_file),
        "+OK\r\n"
    );
    let renewed = Client::new(&pki, Some(&client)).connect(port).unwrap();
    assert_eq!(renewed.peer(), first.cert);
}

#[test]
fn a_bad_tls_file_is_refused_and_the_old_context_kept() {
    let pki = Pki::new("bad");
    let server = pki.issue("server", true);
    let client = pki.issue("client", false);
    let (_s, port) = start(&pki, &server, &[]);
    let mut c = Client::new(&pki, Some(&client)).connect(port).unwrap();
    let missing = pki.dir.join("missing.crt").display().to_string();
    assert_eq!(
        config_set(&mut c, "tls-cert-file", &missing),
        "-ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to update TLS configuration. Check server logs.\r\n"
    );
    // A key that is not the certificate's.
    let other = pki.issue("other", true);
    assert!(config_set(&mut c, "tls-key-file", &other.key_file)
        .starts_with("-ERR CONFIG SET failed (possibly related to argument 'tls-key-file')"));
    assert!(
        config_set(&mut c, "tls-ciphers", "AES128-SHA256:AES256-SHA256")
            .starts_with("-ERR CONFIG SET failed (possibly related to argument 'tls-ciphers')")
    );
    assert!(config_set(&mut c, "tls-protocols", "TLSv1.4")
        .starts_with("-ERR CONFIG SET failed (possibly related to argument 'tls-protocols')"));
    let get = c.call("CONFIG GET tls-cert-file\r\n").unwrap();
    assert!(get.contains(&server.cert_file), "{get}");
    let fresh = Client::new(&pki, Some(&client)).connect(port).unwrap();
    assert_eq!(fresh.peer(), server.cert);
    // A password-protected key (PKCS#8, PBES2 with AES-256-CBC, as
    // `openssl rsa -aes256` writes it) loads with tls-key-file-pass only.
    let der = std::fs::read_to_string(&server.key_file).unwrap();
    let (_, plain) = pkcs8::SecretDocument::from_pem(&der).unwrap();
    let info = pkcs8::PrivateKeyInfo::try_from(plain.as_bytes()).unwrap();
    let params =
        pkcs8::pkcs5::pbes2::Parameters::pbkdf2_sha256_aes256cbc(2048, b"saltsalt", &[7; 16])
            .unwrap();
    let encrypted = info.encrypt_with_params(params, "1234").unwrap();
    let encrypted_file = pki.dir.join("server.key.encrypted");
    std::fs::write(
        &encrypted_file,
        encrypted
            .to_pem("ENCRYPTED PRIVATE KEY", pkcs8::LineEnding::LF)
            .unwrap()
            .as_bytes(),
    )
    .unwrap();
    let encrypted_file = encrypted_file.display().to_string();
    assert!(config_set(&mut c, "tls-key-file", &encrypted_file)
        .contains("Unable to update TLS configuration"));
    assert_eq!(config_set(&mut c, "tls-key-file-pass", "1234"), "+OK\r\n");
    assert_eq!(
        config_set(&mut c, "tls-key-file", &encrypted_file),
        "+OK\r\n"
    );
    assert!(pongs(&Client::new(&pki, Some(&client)), port));
}

#[test]
fn tls_port_beside_port_and_moved_at_runtime() {
    let pki = Pki::new("ports");
    let server = pki.issue("server", true);
    let client = pki.issue("client", false);
    let plain = free_port().to_string();
    let (s, tls_port) = start(&pki, &server, &[("port", plain.as_str())]);
    let plain: u16 = plain.parse().unwrap();
    assert_eq!(s.addr.port(), plain);
    let mut raw = crate::common::RawClient::connect(SocketAddr::from(([127, 0, 0, 1], plain)));
    raw.roundtrip(b"PING\r\n", b"+PONG\r\n");
    let tls = Client::new(&pki, Some(&client));
    assert!(pongs(&tls, tls_port));
    // tls-port 0 closes the TLS listener; another port opens it there.
    raw.roundtrip(b"CONFIG SET tls-port 0\r\n", b"+OK\r\n");
    wait_until("the TLS port to close", Duration::from_secs(5), || {
        TcpStream::connect(("127.0.0.1", tls_port)).is_err()
    });
    let moved = free_port();
    raw.roundtrip(
        format!("CONFIG SET tls-port {moved}\r\n").as_bytes(),
        b"+OK\r\n",
    );
    assert!(pongs(&tls, moved));
    // A port taken by someone else: refused, nothing changes.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_port = taken.local_addr().unwrap().port();
    raw.roundtrip(
        format!("CONFIG SET tls-port {taken_port}\r\n").as_bytes(),
        b"-ERR CONFIG SET failed (possibly related to argument 'tls-port') - Unable to listen on this port. Check server logs.\r\n",
    );
    assert!(pongs(&tls, moved));
    // port 0 closes the plain listener, as in Redis; TLS clients go on.
    let mut admin = tls.connect(moved).unwrap();
    assert_eq!(config_set(&mut admin, "port", "0"), "+OK\r\n");
    wait_until("the plain port to close", Duration::from_secs(5), || {
        TcpStream::connect(("127.0.0.1", plain)).is_err()
    });
    let info = admin.call("INFO server\r\n").unwrap();
    assert!(info.contains(&format!("tcp_port:{moved}\r\n")), "{info}");
    assert!(pongs(&tls, moved));
}

/// A plain-text client on the TLS port is closed without a reply (the Tcl
/// suite's "Not accepting non-TLS connections on a TLS port" reads an I/O
/// error, not TLS alert bytes), and the server goes on.
#[test]
fn a_plain_text_client_on_the_tls_port_is_closed() {
    let pki = Pki::new("plain");
    let server = pki.issue("server", true);
    let client = pki.issue("client", false);
    let (s, port) = start(&pki, &server, &[]);
    for request in [
        &b"*1\r\n$4\r\nPING\r\n"[..],
        b"PING\r\n",
        b"\x16\x03\x01\x00\x05hello",
    ] {
        let mut raw = crate::common::RawClient::connect(s.addr);
        raw.send(request);
        let mut buf = Vec::new();
        let _ = raw.stream.read_to_end(&mut buf);
        if request[0] != 0x16 {
            assert!(buf.is_empty(), "{request:?} got {buf:?}");
        }
    }
    assert!(pongs(&Client::new(&pki, Some(&client)), port));
}

#[test]
fn tls_protocols_and_ciphers() {
    let pki = Pki::new("protocols");
    let server = pki.issue("server", true);
    let client = pki.issue("client", false);
    let (_s, port) = start(&pki, &server, &[]);
    let tls12 = Client {
        versions: TLS12_ONLY,
        ..Client::new(&pki, Some(&client))
    };
    let tls13 = Client {
        versions: TLS13_ONLY,
        ..Client::new(&pki, Some(&client))
    };
    assert!(pongs(&tls12, port));
    let mut admin = tls13.connect(port).unwrap();
    assert_eq!(
        config_set(&mut admin, "tls-protocols", "TLSv1.3"),
        "+OK\r\n"
    );
    assert!(!pongs(&tls12, port));
    assert!(pongs(&tls13, port));
    assert_eq!(
        config_set(&mut admin, "tls-protocols", "TLSv1.2"),
        "+OK\r\n"
    );
    assert!(!pongs(&tls13, port));
    assert!(pongs(&tls12, port));
    // tls-ciphers (OpenSSL's names) chooses the TLS 1.2 suites;
    // tls-prefer-server-ciphers makes the server's order win.
    let mut admin = tls12.connect(port).unwrap();
    use rustls::crypto::ring::cipher_suite as cs;
    let client_order = Client {
        versions: TLS12_ONLY,
        suites: Some(vec![
            cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        ]),
        ..Client::new(&pki, Some(&client))
    };
    assert_eq!(
        config_set(
            &mut admin,
            "tls-ciphers",
            "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384"
        ),
        "+OK\r\n"
    );
    let c = client_order.connect(port).unwrap();
    assert_eq!(
        c.suite(),
        rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
    );
    assert_eq!(
        config_set(&mut admin, "tls-prefer-server-ciphers", "yes"),
        "+OK\r\n"
    );
    let c = client_order.connect(port).unwrap();
    assert_eq!(
        c.suite(),
        rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
    );
    // A suite the list leaves out is refused.
    assert_eq!(
        config_set(
            &mut admin,
            "tls-ciphers",
            "DEFAULT:-ECDHE-ECDSA-AES256-GCM-SHA384"
        ),
        "+OK\r\n"
    );
    let only_256 = Client {
        versions: TLS12_ONLY,
        suites: Some(vec![cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]),
        ..Client::new(&pki, Some(&client))
    };
    assert!(!pongs(&only_256, port));
}

/// maxclients and protected mode hold for TLS clients too: refused with
/// Redis's error, sent over TLS.
#[test]
fn maxclients_applies_to_tls_clients() {
    let pki = Pki::new("maxclients");
    let server = pki.issue("server", true);
    let client = pki.issue("client", false);
    let (_s, port) = start(&pki, &server, &[("maxclients", "1")]);
    let tls = Client::new(&pki, Some(&client));
    let mut first = tls.connect(port).unwrap();
    assert_eq!(first.ping().unwrap(), "+PONG\r\n");
    let mut second = tls.connect(port).unwrap();
    assert_eq!(
        second.ping().unwrap(),
        "-ERR max number of clients reached\r\n"
    );
}

/// Debian's redis-cli, built with TLS, against Goblin.
#[test]
fn redis_cli_over_tls() {
    let cli = Path::new("/usr/bin/redis-cli");
    if !cli.exists() {
        eprintln!("redis-cli not installed: skipped");
        return;
    }
    let pki = Pki::new("cli");
    let server = pki.issue("server", true);
    let client = pki.issue("client", false);
    let (_s, port) = start(&pki, &server, &[]);
    let run = |args: &[&str]| {
        let out = std::process::Command::new(cli)
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "--tls",
                "--cacert",
            ])
            .arg(pki.ca_file())
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    assert_eq!(
        run(&[
            "--cert",
            &client.cert_file,
            "--key",
            &client.key_file,
            "PING"
        ])
        .trim(),
        "PONG"
    );
    assert_eq!(
        run(&[
            "--cert",
            &client.cert_file,
            "--key",
            &client.key_file,
            "SET",
            "a",
            "1"
        ])
        .trim(),
        "OK"
    );
    // Without a client certificate (tls-auth-clients yes): refused.
    let refused = run(&["PING"]);
    assert!(!refused.contains("PONG"), "{refused}");
}

/// tls-session-caching: a client that comes back resumes its session
/// (one client configuration keeps its sessions); with caching off it
/// cannot.
#[test]
fn tls_sessions_resume_while_caching_is_on() {
    let pki = Pki::new("sessions");
    let server = pki.issue("server", true);
    let client = pki.issue("client", false);
    let (_s, port) = start(&pki, &server, &[]);
    let mut roots = rustls::RootCertStore::empty();
    roots.add(pki.ca.der().clone()).unwrap();
    let config = Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_protocol_versions(rustls::ALL_VERSIONS)
        .unwrap()
        .with_root_certificates(roots)
        .with_client_auth_cert(
            vec![client.cert.clone()],
            PrivateKeyDer::Pkcs8(client.key.clone_key()),
        )
        .unwrap(),
    );
    let handshake = || {
        let name = ServerName::IpAddress(std::net::IpAddr::from([127, 0, 0, 1]).into());
        let conn = rustls::ClientConnection::new(config.clone(), name).unwrap();
        let tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut tls = Tls(rustls::StreamOwned::new(conn, tcp));
        // The PING's reply also brings the server's session ticket.
        assert_eq!(tls.ping().unwrap(), "+PONG\r\n");
        tls.0.conn.handshake_kind().unwrap()
    };
    assert_eq!(handshake(), rustls::HandshakeKind::Full);
    assert_eq!(handshake(), rustls::HandshakeKind::Resumed);
    let mut admin = Client::new(&pki, Some(&client)).connect(port).unwrap();
    assert_eq!(
        config_set(&mut admin, "tls-session-caching", "no"),
        "+OK\r\n"
    );
    assert_eq!(handshake(), rustls::HandshakeKind::Full);
    assert_eq!(handshake(), rustls::HandshakeKind::Full);
}

/// tls-ca-cert-dir: the CA certificates of a directory verify client
/// certificates; tls-dh-params-file must be a DH parameters file.
#[test]
fn tls_ca_cert_dir_and_dh_params() {
    let pki = Pki::new("cadir");
    let server = pki.issue("server", true);
    let client = pki.issue("client", false);
    let (_s, port) = start(&pki, &server, &[]);
    let dir = pki.dir.join("cas");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(pki.ca_file(), dir.join("ca.pem")).unwrap();
    let mut admin = Client::new(&pki, Some(&client)).connect(port).unwrap();
    let dir = dir.display().to_string();
    let reply = admin
        .call(&format!(
            "*6\r\n$6\r\nCONFIG\r\n$3\r\nSET\r\n$16\r\ntls-ca-cert-file\r\n$0\r\n\r\n$15\r\ntls-ca-cert-dir\r\n${}\r\n{dir}\r\n",
            dir.len()
        ))
        .unwrap();
    assert_eq!(reply, "+OK\r\n");
    assert!(pongs(&Client::new(&pki, Some(&client)), port));
    assert!(!pongs(&Client::new(&pki, None), port));
    // A file that is no DH parameters file is refused.
    assert!(
        config_set(&mut admin, "tls-dh-params-file", &server.cert_file)
            .contains("Unable to update TLS configuration")
    );
    let dh = pki.dir.join("dh.pem");
    std::fs::write(
        &dh,
        "-----BEGIN DH PARAMETERS-----\nMAYCAQACAQI=\n-----END DH PARAMETERS-----\n",
    )
    .unwrap();
    assert_eq!(
        config_set(&mut admin, "tls-dh-params-file", &dh.display().to_string()),
        "+OK\r\n"
    );
}

/// Connections that never finish their handshake are bounded by
/// maxclients: past it, new ones are closed at once; the server serves
/// again once they go.
#[test]
fn handshakes_in_progress_are_bounded_by_maxclients() {
    let pki = Pki::new("handshakes");
    let server = pki.issue("server", true);
    let client = pki.issue("client", false);
    let (_s, port) = start(&pki, &server, &[("maxclients", "1")]);
    // Two connections that send nothing: one is in its handshake, the
    // other is closed at once (whichever the server took second).
    let silent: Vec<TcpStream> = (0..2)
        .map(|_| {
            let c = TcpStream::connect(("127.0.0.1", port)).unwrap();
            c.set_read_timeout(Some(Duration::from_millis(100)))
                .unwrap();
            c
        })
        .collect();
    wait_until("one of them to be closed", Duration::from_secs(10), || {
        silent
            .iter()
            .any(|mut c| matches!(c.read(&mut [0u8; 16]), Ok(0)))
    });
    drop(silent);
    let tls = Client::new(&pki, Some(&client));
    wait_until(
        "a client to be served again",
        Duration::from_secs(10),
        || pongs(&tls, port),
    );
}
