//! Property tests: random, truncated and hostile input never panics the
//! parser or the server, and the server keeps serving other clients.

use crate::common::{resp, TestServer};
use goblin_engine::protocol::{Parsed, RequestParser};
use proptest::prelude::*;

fn drive(parser: &mut RequestParser, input: &[u8]) -> Option<Vec<u8>> {
    let mut pos_guard = 0;
    loop {
        pos_guard += 1;
        assert!(pos_guard < 100_000, "parser does not make progress");
        match parser.parse(input, false) {
            Parsed::Command | Parsed::Empty => {}
            Parsed::Incomplete => return None,
            Parsed::Error(e) => return Some(e),
        }
    }
}

/// Valid commands of arbitrary bytes.
fn command() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 1..6)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(input in prop::collection::vec(any::<u8>(), 0..512)) {
        let mut p = RequestParser::new(512 * 1024 * 1024);
        let _ = drive(&mut p, &input);
    }

    #[test]
    fn protocol_like_noise_never_panics(parts in prop::collection::vec(prop_oneof![
        Just(b"*".to_vec()), Just(b"$".to_vec()), Just(b"\r\n".to_vec()), Just(b"-1".to_vec()),
        Just(b"99999999999999999999".to_vec()), Just(b"3".to_vec()), Just(b"\"".to_vec()), Just(b"'".to_vec()),
        prop::collection::vec(any::<u8>(), 0..8),
    ], 0..40)) {
        let input: Vec<u8> = parts.concat();
        let mut p = RequestParser::new(1024 * 1024);
        let _ = drive(&mut p, &input);
    }

    /// Any valid command, cut at any point, is reported incomplete (never an
    /// error, never a command with wrong arguments); whole, it parses back
    /// to exactly its arguments.
    #[test]
    fn truncation_is_incomplete_and_whole_round_trips(args in command(), cut in any::<prop::sample::Index>()) {
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        let bytes = resp(&refs);
        let at = cut.index(bytes.len());
        let mut p = RequestParser::new(1024 * 1024);
        prop_assert_eq!(p.parse(&bytes[..at], false), Parsed::Incomplete);
        let mut p = RequestParser::new(1024 * 1024);
        prop_assert_eq!(p.parse(&bytes, false), Parsed::Command);
        let mut argv = Vec::new();
        p.argv(&bytes, &mut argv);
        prop_assert_eq!(argv, refs);
    }

    /// Huge declared lengths are errors or wait for data; they never make
    /// the parser reserve that much memory (it would abort the process).
    #[test]
    fn huge_declared_lengths(n in any::<u64>()) {
        let input = format!("*1\r\n${n}\r\nab");
        let mut p = RequestParser::new(512 * 1024 * 1024);
        let _ = drive(&mut p, input.as_bytes());
        let input = format!("*{n}\r\n$1\r\na\r\n");
        let mut p = RequestParser::new(512 * 1024 * 1024);
        let _ = drive(&mut p, input.as_bytes());
    }
}

/// The same hostility over the network: the server answers with an error
/// or closes, and another client is served throughout.
#[test]
fn hostile_clients_do_not_hurt_the_server() {
    let s = TestServer::start();
    let mut rng = fastrand::Rng::with_seed(7);
    let mut healthy = s.raw();
    for round in 0..200 {
        let len = rng.usize(0..300);
        let mut junk: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
        if round % 3 == 0 {
            junk.splice(
                0..0,
                format!("*{}\r\n${}\r\n", rng.u32(..), rng.u64(..)).into_bytes(),
            );
        }
        let mut c = s.raw();
        let _ = std::io::Write::write_all(&mut c.stream, &junk);
        drop(c);
        if round % 20 == 0 {
            healthy.roundtrip(b"PING\r\n", b"+PONG\r\n");
        }
    }
    healthy.roundtrip(&resp(&[b"SET", b"after", b"ok"]), b"+OK\r\n");
    healthy.roundtrip(&resp(&[b"GET", b"after"]), b"$2\r\nok\r\n");
}
