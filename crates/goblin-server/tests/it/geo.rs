//! The geo commands against Debian's redis-server 7.0.15, byte for byte.
//!
//! Each test starts an in-process goblin-server and a real `redis-server`
//! (a child process on a free port; the tests fail, never skip, when it is
//! missing), sends both the same commands over raw connections (RESP2, and
//! RESP3 after HELLO 3), and requires the very same reply bytes. Random
//! points, centres, radii, boxes, units (in any letter case) and option
//! combinations come from fixed seeds, so a failure replays; the seed and
//! the command are in the message. After each step that may write, the
//! keys it touches must hold the same members and scores on both servers.

use crate::common::TestServer;
use crate::goblin_support::RedisProcess;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

/// A connection that returns each reply's raw bytes (RESP2 or RESP3).
struct Raw {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Raw {
    fn connect(addr: SocketAddr) -> Raw {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_nodelay(true).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Raw {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        }
    }

    fn call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            let a = a.as_ref();
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        self.writer.write_all(&out).unwrap();
        let mut reply = Vec::new();
        self.read_one(&mut reply);
        reply
    }

    fn read_one(&mut self, out: &mut Vec<u8>) {
        let start = out.len();
        self.reader.read_until(b'\n', out).unwrap();
        let line = out[start..].to_vec();
        assert!(line.ends_with(b"\r\n"), "truncated reply {line:?}");
        let n = || -> i64 {
            std::str::from_utf8(&line[1..line.len() - 2])
                .unwrap()
                .parse()
                .unwrap()
        };
        match line[0] {
            b'$' | b'=' | b'!' => {
                let len = n();
                if len >= 0 {
                    let mut buf = vec![0u8; len as usize + 2];
                    self.reader.read_exact(&mut buf).unwrap();
                    out.extend_from_slice(&buf);
                }
            }
            b'*' | b'~' | b'>' => {
                for _ in 0..n().max(0) {
                    self.read_one(out);
                }
            }
            b'%' => {
                for _ in 0..2 * n().max(0) {
                    self.read_one(out);
                }
            }
            _ => {}
        }
    }
}

fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn show_args<A: AsRef<[u8]>>(args: &[A]) -> String {
    args.iter()
        .map(|a| show(a.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The two servers, with a RESP2 and a RESP3 connection to each.
struct Servers {
    _goblin: TestServer,
    _redis: RedisProcess,
    g2: Raw,
    r2: Raw,
    g3: Raw,
    r3: Raw,
    /// What failures are reported with (the seed).
    context: String,
}

impl Servers {
    fn start() -> Servers {
        Servers::with(TestServer::start(), RedisProcess::start())
    }

    fn with(goblin: TestServer, redis: RedisProcess) -> Servers {
        let mut s = Servers {
            g2: Raw::connect(goblin.addr),
            r2: Raw::connect(redis.addr),
            g3: Raw::connect(goblin.addr),
            r3: Raw::connect(redis.addr),
            _goblin: goblin,
            _redis: redis,
            context: String::new(),
        };
        s.g3.call(&["HELLO", "3"]);
        s.r3.call(&["HELLO", "3"]);
        s
    }

    /// Sends `args` to both over RESP2; the replies must be the same bytes.
    fn both<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Vec<u8> {
        let g = self.g2.call(args);
        let r = self.r2.call(args);
        assert_eq!(
            show(&g),
            show(&r),
            "RESP2 reply to `{}` ({})",
            show_args(args),
            self.context
        );
        g
    }

    /// `both`, then the same over RESP3 (for commands that do not write).
    fn both_resp23<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Vec<u8> {
        let reply = self.both(args);
        let g = self.g3.call(args);
        let r = self.r3.call(args);
        assert_eq!(
            show(&g),
            show(&r),
            "RESP3 reply to `{}` ({})",
            show_args(args),
            self.context
        );
        reply
    }

    /// The key's type and members with scores must be the same on both.
    fn same_key(&mut self, key: &str) -> Vec<u8> {
        self.both(&["TYPE", key]);
        self.both(&["ZRANGE", key, "0", "-1", "WITHSCORES"])
    }
}

/// A command written as one line, its arguments separated by single spaces.
fn words(line: &str) -> Vec<String> {
    line.split(' ').map(String::from).collect()
}

fn is_error(reply: &[u8]) -> bool {
    reply.first() == Some(&b'-')
}

/// A coordinate as clients write them: a few digits, sometimes many,
/// sometimes an integer.
fn coord(rng: &mut fastrand::Rng, min: f64, max: f64) -> String {
    let v = min + rng.f64() * (max - min);
    match rng.u8(0..4) {
        0 => format!("{v:.0}"),
        1 => format!("{v:.3}"),
        2 => format!("{v:.6}"),
        _ => format!("{v}"),
    }
}

/// A unit in a random letter case, and its size in meters.
fn unit(rng: &mut fastrand::Rng) -> (String, f64) {
    let (u, m) = [("m", 1.0), ("km", 1000.0), ("ft", 0.3048), ("mi", 1609.34)][rng.usize(0..4)];
    let u: String = u
        .chars()
        .map(|c| {
            if rng.bool() {
                c.to_ascii_uppercase()
            } else {
                c
            }
        })
        .collect();
    (u, m)
}

/// A distance of `meters` or so in the unit, spread over orders of
/// magnitude (and sometimes 0).
fn length(rng: &mut fastrand::Rng, unit_m: f64, max_m: f64) -> String {
    if rng.u8(0..20) == 0 {
        return "0".into();
    }
    let meters = max_m.powf(rng.f64());
    let v = meters / unit_m;
    if rng.bool() {
        format!("{v:.2}")
    } else {
        format!("{v}")
    }
}

/// Fills `key` on both servers with `n` random points: spread over the
/// whole map, clustered around a few places (near the poles' limits and
/// the antimeridian too), and several members at exactly the same spot,
/// so that distances tie.
fn fill(s: &mut Servers, rng: &mut fastrand::Rng, key: &str, n: usize) -> Vec<String> {
    let centres = [
        (13.361389, 38.115556),
        (179.9, 10.0),
        (-179.9, -10.0),
        (0.0, 84.9),
        (-73.98, 40.75),
        (151.2, -33.86),
    ];
    let mut members = Vec::new();
    let mut args: Vec<String> = vec!["GEOADD".into(), key.into()];
    for i in 0..n {
        let (lon, lat) = match rng.u8(0..4) {
            0 => (
                coord(rng, -180.0, 180.0),
                coord(rng, -85.05112878, 85.05112878),
            ),
            1 | 2 => {
                let (clon, clat) = centres[rng.usize(0..centres.len())];
                let lon = (clon + (rng.f64() - 0.5) * 2.0).clamp(-180.0, 180.0);
                let lat = (clat + (rng.f64() - 0.5) * 2.0).clamp(-85.0, 85.0);
                (format!("{lon:.6}"), format!("{lat:.6}"))
            }
            _ => {
                // The same spot as a centre, exactly.
                let (clon, clat) = centres[rng.usize(0..centres.len())];
                (format!("{clon}"), format!("{clat}"))
            }
        };
        let member = format!("m{i}");
        args.extend([lon, lat, member.clone()]);
        members.push(member);
        if args.len() > 200 {
            s.both(&args);
            args.truncate(2);
        }
    }
    if args.len() > 2 {
        s.both(&args);
    }
    // The limits themselves.
    s.both(&["GEOADD", key, "180", "85.05112878", "north-east"]);
    s.both(&["GEOADD", key, "-180", "-85.05112878", "south-west"]);
    members.push("north-east".into());
    members.push("south-west".into());
    s.same_key(key);
    members
}

/// The options after the centre and shape: a random subset of WITH*, an
/// order, COUNT [ANY], in a random order.
fn options(rng: &mut fastrand::Rng, with: bool) -> Vec<String> {
    let mut parts: Vec<Vec<String>> = Vec::new();
    if with {
        for w in ["WITHCOORD", "WITHDIST", "WITHHASH"] {
            if rng.bool() {
                parts.push(vec![w.into()]);
            }
        }
    }
    match rng.u8(0..3) {
        0 => parts.push(vec!["ASC".into()]),
        1 => parts.push(vec!["DESC".into()]),
        _ => {}
    }
    if rng.u8(0..3) != 0 {
        let mut c = vec!["COUNT".into(), rng.u32(1..40).to_string()];
        if rng.u8(0..3) == 0 {
            c.push("ANY".into());
        }
        parts.push(c);
    }
    rng.shuffle(&mut parts);
    parts.concat()
}

/// A centre (FROMMEMBER or FROMLONLAT) and a shape (BYRADIUS or BYBOX).
fn geosearch_area(rng: &mut fastrand::Rng, members: &[String]) -> Vec<String> {
    let mut a = Vec::new();
    if rng.bool() {
        a.push("FROMMEMBER".into());
        a.push(members[rng.usize(0..members.len())].clone());
    } else {
        a.push("FROMLONLAT".into());
        a.push(coord(rng, -180.0, 180.0));
        a.push(coord(rng, -85.05112878, 85.05112878));
    }
    let (u, m) = unit(rng);
    if rng.bool() {
        a.extend(["BYRADIUS".into(), length(rng, m, 2.5e7), u]);
    } else {
        a.extend(["BYBOX".into(), length(rng, m, 5e7), length(rng, m, 5e7), u]);
    }
    a
}

fn search_command(rng: &mut fastrand::Rng, key: &str, members: &[String]) -> Vec<String> {
    let mut cmd: Vec<String> = Vec::new();
    match rng.u8(0..5) {
        0 | 1 => {
            cmd.push(
                if rng.bool() {
                    "GEORADIUS"
                } else {
                    "GEORADIUS_RO"
                }
                .into(),
            );
            cmd.push(key.into());
            cmd.push(coord(rng, -180.0, 180.0));
            cmd.push(coord(rng, -85.05112878, 85.05112878));
            let (u, m) = unit(rng);
            cmd.push(length(rng, m, 2.5e7));
            cmd.push(u);
        }
        2 => {
            cmd.push(
                if rng.bool() {
                    "GEORADIUSBYMEMBER"
                } else {
                    "GEORADIUSBYMEMBER_RO"
                }
                .into(),
            );
            cmd.push(key.into());
            cmd.push(members[rng.usize(0..members.len())].clone());
            let (u, m) = unit(rng);
            cmd.push(length(rng, m, 2.5e7));
            cmd.push(u);
        }
        _ => {
            cmd.push("GEOSEARCH".into());
            cmd.push(key.into());
            cmd.extend(geosearch_area(rng, members));
        }
    }
    cmd.extend(options(rng, true));
    cmd
}

#[test]
fn random_searches_reply_as_redis() {
    let mut s = Servers::start();
    for seed in [1u64, 2, 3] {
        s.context = format!("seed {seed}");
        let mut rng = fastrand::Rng::with_seed(seed);
        let key = format!("points{seed}");
        // Seed 3 stays small (a packed sorted set); the others are large.
        let n = if seed == 3 { 60 } else { 700 };
        let members = fill(&mut s, &mut rng, &key, n);
        let mut found = 0;
        for _ in 0..400 {
            let cmd = search_command(&mut rng, &key, &members);
            let reply = s.both_resp23(&cmd);
            assert!(!is_error(&reply), "`{}`: {}", show_args(&cmd), show(&reply));
            if reply != b"*0\r\n" {
                found += 1;
            }
        }
        // The shapes are not all too small (or too large) to tell.
        assert!(
            (100..400).contains(&found),
            "{found} of 400 searches found points"
        );
    }
}

#[test]
fn positions_hashes_and_distances_reply_as_redis() {
    let mut s = Servers::start();
    let mut rng = fastrand::Rng::with_seed(11);
    let members = fill(&mut s, &mut rng, "pts", 300);
    for chunk in members.chunks(25) {
        let mut pos = vec!["GEOPOS".to_string(), "pts".into()];
        pos.extend(chunk.iter().cloned());
        pos.push("missing".into());
        s.both_resp23(&pos);
        pos[0] = "GEOHASH".into();
        s.both_resp23(&pos);
    }
    for _ in 0..300 {
        let a = &members[rng.usize(0..members.len())];
        let b = &members[rng.usize(0..members.len())];
        if rng.bool() {
            s.both_resp23(&["GEODIST", "pts", a, b]);
        } else {
            let (u, _) = unit(&mut rng);
            s.both_resp23(&["GEODIST", "pts", a, b, &u]);
        }
    }
    s.both_resp23(&words("GEODIST pts m1 missing"));
    s.both_resp23(&words("GEODIST nokey m1 m2 km"));
    s.both_resp23(&words("GEOPOS nokey m1 m2"));
    s.both_resp23(&words("GEOHASH nokey m1"));
    s.both_resp23(&words("GEOPOS pts"));
    s.both_resp23(&words("GEOHASH pts"));
}

#[test]
fn equal_distances_come_in_redis_order() {
    // Many members at a handful of spots: every search ties, and the order
    // is whatever the C library's merge sort (all results) or Redis's
    // partial quicksort (COUNT) leaves.
    let mut s = Servers::start();
    let mut rng = fastrand::Rng::with_seed(5);
    for key in ["ties-small", "ties-large"] {
        let n = if key == "ties-small" { 40 } else { 400 };
        let spots = [
            ("10", "20"),
            ("10.001", "20"),
            ("10", "20.001"),
            ("9.999", "19.999"),
        ];
        let mut args = vec!["GEOADD".to_string(), key.into()];
        for i in 0..n {
            let (lon, lat) = spots[rng.usize(0..spots.len())];
            args.extend([
                lon.into(),
                lat.into(),
                format!("t{:03}", rng.u32(0..1000) + i * 1000),
            ]);
        }
        s.both(&args);
        for count in [
            None,
            Some(1),
            Some(3),
            Some(7),
            Some(8),
            Some(41),
            Some(100),
        ] {
            for order in ["ASC", "DESC"] {
                let mut cmd: Vec<String> = ["GEOSEARCH", key, "FROMLONLAT", "10", "20"]
                    .map(String::from)
                    .to_vec();
                cmd.extend(["BYRADIUS", "1", "km", order, "WITHDIST"].map(String::from));
                if let Some(c) = count {
                    cmd.extend(["COUNT".into(), c.to_string()]);
                }
                s.both_resp23(&cmd);
                let mut radius: Vec<String> =
                    ["GEORADIUS", key, "10.0005", "20.0005", "500", "m", order]
                        .map(String::from)
                        .to_vec();
                if let Some(c) = count {
                    radius.extend(["COUNT".into(), c.to_string()]);
                }
                s.both_resp23(&radius);
            }
        }
    }
}

#[test]
fn stored_searches_store_as_redis() {
    let mut s = Servers::start();
    let mut rng = fastrand::Rng::with_seed(21);
    let members = fill(&mut s, &mut rng, "src", 400);
    for step in 0..250 {
        s.context = format!("step {step}");
        let dst = ["dst1", "dst2", "src-copy", "dst3"][rng.usize(0..4)];
        let cmd: Vec<String> = match rng.u8(0..3) {
            0 => {
                let mut c = vec!["GEOSEARCHSTORE".to_string(), dst.into(), "src".into()];
                c.extend(geosearch_area(&mut rng, &members));
                c.extend(options(&mut rng, false));
                if rng.bool() {
                    c.push("STOREDIST".into());
                }
                c
            }
            _ => {
                let mut c = if rng.bool() {
                    let mut c = vec!["GEORADIUS".to_string(), "src".into()];
                    c.push(coord(&mut rng, -180.0, 180.0));
                    c.push(coord(&mut rng, -85.05112878, 85.05112878));
                    c
                } else {
                    let member = members[rng.usize(0..members.len())].clone();
                    vec!["GEORADIUSBYMEMBER".to_string(), "src".into(), member]
                };
                let (u, m) = unit(&mut rng);
                c.extend([length(&mut rng, m, 2.5e7), u]);
                c.extend(options(&mut rng, false));
                c.push(if rng.bool() { "STORE" } else { "STOREDIST" }.into());
                c.push(dst.into());
                // Sometimes a second STORE: the last one wins.
                if rng.u8(0..8) == 0 {
                    c.extend(["STORE".into(), "dst4".into()]);
                }
                c
            }
        };
        s.both(&cmd);
        for k in ["dst1", "dst2", "dst3", "dst4", "src-copy", "src"] {
            s.same_key(k);
        }
        // A stored result is a sorted set like any other: search it too.
        if rng.u8(0..4) == 0 {
            let cmd = search_command(&mut rng, dst, &members);
            s.both(&cmd);
        }
    }
    // The source as its own destination.
    s.both(&words(
        "GEOSEARCHSTORE self src FROMLONLAT 0 0 BYBOX 40000 40000 km",
    ));
    s.both(&words("GEORADIUS self 13 38 3000 km STOREDIST self"));
    s.same_key("self");
    // A missing source deletes the destination; an empty result too.
    s.both(&words("SET dst1 x"));
    s.both(&words(
        "GEOSEARCHSTORE dst1 nosrc FROMLONLAT 0 0 BYRADIUS 1 m",
    ));
    s.same_key("dst1");
    s.both(&words(
        "GEOSEARCHSTORE dst2 src FROMLONLAT 0 -60 BYRADIUS 1 m",
    ));
    s.same_key("dst2");
    s.both(&words("GEORADIUSBYMEMBER nosrc whatever -5 km STORE dst3"));
    s.same_key("dst3");
    // The destination's TTL goes, as with any SET.
    s.both(&words(
        "GEOSEARCHSTORE dst1 src FROMLONLAT 13.36 38.11 BYRADIUS 300 km",
    ));
    s.both(&words("EXPIRE dst1 1000"));
    s.both(&words(
        "GEOSEARCHSTORE dst1 src FROMLONLAT 13.36 38.11 BYRADIUS 200 km STOREDIST",
    ));
    s.both(&words("TTL dst1"));
    s.same_key("dst1");
}

#[test]
fn geoadd_options_and_updates_reply_as_redis() {
    let mut s = Servers::start();
    let seq: &[&str] = &[
        "GEOADD k 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
        "GEOADD k 13.361389 38.115556 Palermo",
        "GEOADD k CH 13.5 38.1 Palermo",
        "GEOADD k NX 1 1 Palermo 2 2 new",
        "GEOADD k XX 3 3 Palermo 4 4 other",
        "GEOADD k CH NX 5 5 Palermo",
        "GEOADD k ch xx 6 6 Palermo",
        "GEOADD k nx CH 7 7 a 7 7 a",
        "GEOADD xxkey XX 1 1 a",
        "GEOADD k -180 -85.05112878 corner 180 85.05112878 corner2",
        "EXISTS xxkey",
        "OBJECT ENCODING k",
    ];
    for line in seq {
        s.both(&words(line));
    }
    s.both(&["GEOADD", "k", "0", "0", "\u{0}bin\u{ff}ary"]);
    s.same_key("k");
    // Enough members for the large encoding, then a search over them.
    let mut args = vec!["GEOADD".to_string(), "big".into()];
    for i in 0..200 {
        args.extend([format!("{}", i as f64 * 0.01), "45".into(), format!("p{i}")]);
    }
    s.both(&args);
    s.both(&words("OBJECT ENCODING big"));
    s.same_key("big");
    s.both_resp23(&words(
        "GEORADIUS big 1 45 50 km WITHDIST WITHHASH WITHCOORD COUNT 10",
    ));
}

#[test]
fn scores_that_are_no_geohash_decode_as_redis() {
    // Any sorted set can be read as a geo set; Redis decodes whatever the
    // score is (negative, huge, infinite, fractional).
    let mut s = Servers::start();
    let scores = words(
        "-1 -1e30 1e30 inf -inf 1.5 9.3e18 5e15 0 4503599627370495 4503599627370496 \
         3479099956230698.5",
    );
    for (i, sc) in scores.iter().enumerate() {
        s.both(&["ZADD", "odd", sc, &format!("s{i}")]);
    }
    for i in 0..scores.len() {
        let m = format!("s{i}");
        s.both_resp23(&["GEOPOS", "odd", &m]);
        s.both_resp23(&["GEOHASH", "odd", &m]);
        s.both_resp23(&["GEODIST", "odd", &m, "s0", "km"]);
        s.both_resp23(&words(&format!(
            "GEOSEARCH odd FROMMEMBER {m} BYRADIUS 20000 km WITHHASH WITHCOORD WITHDIST ASC"
        )));
        s.both_resp23(&["GEORADIUSBYMEMBER", "odd", &m, "100", "km", "WITHHASH"]);
    }
}

/// Every bad request: Redis's error, and nothing changed on either server.
#[test]
fn bad_input_gets_redis_errors_and_changes_nothing() {
    let mut s = Servers::start();
    s.both(&words(
        "GEOADD pts 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
    ));
    s.both(&words("SET str value"));
    s.both(&words("LPUSH list a"));
    s.both(&words("GEOADD dst 1 1 kept"));
    let bad: &[&str] = &[
        // Arity.
        "GEOADD pts 1 2",
        "GEOADD",
        "GEODIST pts Palermo",
        "GEOHASH",
        "GEOPOS",
        "GEORADIUS pts 1 2 3",
        "GEORADIUS_RO pts 1 2 3",
        "GEORADIUSBYMEMBER pts Palermo 3",
        "GEORADIUSBYMEMBER_RO pts Palermo 3",
        "GEOSEARCH pts FROMLONLAT 1 2 BYRADIUS",
        "GEOSEARCHSTORE dst pts FROMLONLAT 1 2 BYRADIUS",
        // Wrong types.
        "GEOADD str 1 1 a",
        "GEOADD list 1 1 a",
        "GEOPOS str a",
        "GEOHASH list a",
        "GEODIST str a b",
        "GEODIST str a b km",
        "GEORADIUS str 1 1 1 km",
        "GEORADIUS str 1 1 1 km STORE dst",
        "GEORADIUSBYMEMBER str a 1 km",
        "GEOSEARCH list FROMLONLAT 1 1 BYRADIUS 1 km",
        "GEOSEARCHSTORE dst str FROMLONLAT 1 1 BYRADIUS 1 km",
        // The destination's type does not matter, its value is replaced;
        // these error out before.
        "GEOSEARCHSTORE str pts FROMLONLAT 1 1 BYRADIUS 1 parsec",
        // Coordinates.
        "GEOADD pts 180.0001 0 a",
        "GEOADD pts -180.0001 0 a",
        "GEOADD pts 0 85.05112879 a",
        "GEOADD pts 0 -85.05112879 a",
        "GEOADD pts 1e300 -1e300 a",
        "GEOADD pts inf 0 a",
        "GEOADD pts nan 0 a",
        "GEOADD pts 1 1 ok x 1 bad",
        "GEORADIUS pts 200 0 1 km",
        "GEORADIUS pts 0 90 1 km",
        "GEORADIUS pts abc 0 1 km",
        "GEOSEARCH pts FROMLONLAT 0 -86 BYRADIUS 1 km",
        // Units and lengths.
        "GEODIST pts Palermo Catania parsec",
        "GEODIST pts Palermo Catania km extra",
        "GEODIST nokey Palermo Catania parsec",
        "GEORADIUS pts 1 1 1 kms",
        "GEORADIUS pts 1 1 -1 km",
        "GEORADIUS pts 1 1 one km",
        "GEORADIUSBYMEMBER pts Palermo -1 km",
        "GEORADIUSBYMEMBER pts Palermo x km",
        "GEORADIUSBYMEMBER pts Palermo 1 yards",
        "GEOSEARCH pts FROMMEMBER Palermo BYBOX -1 1 km",
        "GEOSEARCH pts FROMMEMBER Palermo BYBOX 1 -1 km",
        "GEOSEARCH pts FROMMEMBER Palermo BYBOX w 1 km",
        "GEOSEARCH pts FROMMEMBER Palermo BYBOX 1 h km",
        "GEOSEARCH pts FROMMEMBER Palermo BYBOX 1 1 cubits",
        "GEOSEARCH pts FROMMEMBER Palermo BYRADIUS 1 cubits",
        // Members.
        "GEORADIUSBYMEMBER pts nobody 1 km",
        "GEORADIUSBYMEMBER_RO pts nobody -1 parsec",
        "GEOSEARCH pts FROMMEMBER nobody BYRADIUS 1 km",
        "GEOSEARCH pts FROMMEMBER nobody BYRADIUS 1 km WHAT",
        "GEOSEARCHSTORE dst pts FROMMEMBER nobody BYRADIUS 1 km",
        // Options.
        "GEOADD pts NX XX 1 1 a",
        "GEOADD pts CH CH CH",
        "GEOADD pts GT 1 1 a",
        "GEOADD pts INCR 1 1 a",
        "GEOADD pts CH 1 1 a 2",
        "GEORADIUS pts 1 1 1 km COUNT",
        "GEORADIUS pts 1 1 1 km COUNT 0",
        "GEORADIUS pts 1 1 1 km COUNT -3",
        "GEORADIUS pts 1 1 1 km COUNT 1.5",
        "GEORADIUS pts 1 1 1 km COUNT 99999999999999999999",
        "GEORADIUS pts 1 1 1 km ANY",
        "GEORADIUS pts 1 1 1 km STORE",
        "GEORADIUS pts 1 1 1 km STORE dst WITHDIST",
        "GEORADIUS pts 1 1 1 km WITHCOORD STOREDIST dst",
        "GEORADIUS pts 1 1 1 km WITHHASH STORE dst",
        "GEORADIUS_RO pts 1 1 1 km STORE dst",
        "GEORADIUSBYMEMBER_RO pts Palermo 1 km STOREDIST dst",
        "GEORADIUS pts 1 1 1 km FROMLONLAT 1 1",
        "GEORADIUS pts 1 1 1 km BYRADIUS 1 km",
        "GEORADIUS pts 1 1 1 km WITHDISTANCE",
        "GEOSEARCH pts BYRADIUS 1 km ASC",
        "geosearch pts BYRADIUS 1 km ASC ASC",
        "GeoSearchStore dst pts BYRADIUS 1 km ASC ASC",
        "GEOsearch pts FROMLONLAT 1 1 ASC ASC",
        "GEOSEARCH pts FROMLONLAT 1 1 ASC DESC",
        "GEOSEARCHSTORE dst pts FROMLONLAT 1 1 ASC WITHDIST",
        "GEOSEARCH pts FROMLONLAT 1 1 FROMMEMBER Palermo BYRADIUS 1 km",
        "GEOSEARCH pts FROMMEMBER Palermo FROMLONLAT 1 1 BYRADIUS 1 km",
        "GEOSEARCH pts FROMMEMBER Palermo BYRADIUS 1 km BYBOX 1 1 km",
        "GEOSEARCH pts FROMMEMBER Palermo BYBOX 1 1 km BYRADIUS 1 km",
        "GEOSEARCH pts FROMMEMBER Palermo BYRADIUS 1 km STORE dst",
        "GEOSEARCH pts FROMMEMBER Palermo BYRADIUS 1 km STOREDIST",
        "GEOSEARCH pts FROMMEMBER Palermo BYRADIUS 1 km ANY",
        "GEOSEARCH pts FROMMEMBER Palermo BYRADIUS 1 km COUNT 0 ANY",
        "GEOSEARCH pts FROMMEMBER Palermo BYRADIUS 1 km FROMMEMBER",
        "GEOSEARCH pts FROMMEMBER Palermo BYBOX 1 km",
        "GEOSEARCH nokey FROMMEMBER x BYRADIUS 1 km WITHDIST STOREDIST",
        "GEOSEARCH nokey FROMLONLAT 500 1 BYRADIUS 1 km",
        "GEOSEARCH nokey FROMMEMBER x BYRADIUS -1 km",
        "GEOSEARCH nokey FROMMEMBER x ASC",
        "GEOSEARCHSTORE dst pts FROMMEMBER Palermo BYRADIUS 1 km STORE x",
        "GEOSEARCHSTORE dst pts FROMMEMBER Palermo BYRADIUS 1 km WITHCOORD",
        "GEOSEARCHSTORE dst pts FROMMEMBER Palermo BYRADIUS 1 km ANY",
    ];
    let long = "9".repeat(400);
    let bad: Vec<Vec<String>> = bad
        .iter()
        .map(|line| words(line))
        .chain([
            ["GEOADD", "pts", "1", "", "a"].map(String::from).to_vec(),
            ["GEOADD", "pts", " 1", "1", "a"].map(String::from).to_vec(),
            words(&format!("GEOSEARCH pts FROMLONLAT {long} 0 BYRADIUS 1 km")),
        ])
        .collect();
    let keys = ["pts", "str", "list", "dst", "a", "x", "nokey"];
    for cmd in &bad {
        let g = s.both(cmd);
        assert!(
            is_error(&g),
            "`{}` should fail, got {}",
            show_args(cmd),
            show(&g)
        );
        for k in keys {
            s.both(&["TYPE", k]);
        }
        s.same_key("pts");
        s.same_key("dst");
        s.both(&words("GET str"));
        s.both(&["DBSIZE"]);
    }
    // Requests that look odd but are valid, with the same effects.
    let odd: &[&str] = &[
        "GEORADIUSBYMEMBER nokey x -1 parsec",
        "GEOADD pts 0x10 1 hex",
        "GEORADIUSBYMEMBER nokey x -1 parsec STORE dst",
        "GEORADIUS pts 1 1 1 km COUNT 9223372036854775807",
        "GEORADIUS pts 13 38 500 KM STORE STORE",
        "GEORADIUS pts 13 38 500 km STOREDIST dst STORE x",
        "GEOSEARCH pts FROMMEMBER Palermo FROMMEMBER Catania BYRADIUS 1 km BYRADIUS 2 km",
        "GEOSEARCH pts FROMLONLAT 1 1 FROMLONLAT 13 38 BYBOX 1 1 km BYBOX 900 900 km withdist withdist asc desc",
        "GEOSEARCHSTORE dst pts FROMMEMBER Palermo BYRADIUS 500 km STOREDIST STOREDIST",
        "GEOSEARCH pts FROMLONLAT 13 38 BYRADIUS 1e308 m",
        "GEOSEARCH pts FROMLONLAT 13 38 BYBOX 1e308 1e308 mi",
        "GEOSEARCH pts FROMLONLAT 13 38 BYRADIUS inf m",
        "GEOSEARCH pts FROMLONLAT 13 38 BYRADIUS 0 m",
    ];
    for line in odd {
        s.both_resp23(&words(line));
        for k in ["pts", "dst", "x", "STORE"] {
            s.same_key(k);
        }
    }
}

#[test]
fn geo_commands_are_described_as_in_redis() {
    let mut s = Servers::start();
    for name in [
        "geoadd",
        "geodist",
        "geohash",
        "geopos",
        "georadius",
        "georadius_ro",
        "georadiusbymember",
        "georadiusbymember_ro",
        "geosearch",
        "geosearchstore",
    ] {
        s.both(&["COMMAND", "INFO", name]);
    }
    // The same commands (Redis lists them in its hash table's order).
    let sorted = |s: &mut Raw| {
        let reply = show(&s.call(&["ACL", "CAT", "geo"]));
        let mut lines: Vec<String> = reply.split("\r\n").map(String::from).collect();
        lines.sort();
        lines
    };
    assert_eq!(sorted(&mut s.g2), sorted(&mut s.r2));
    let getkeys: &[&str] = &[
        "GEORADIUS src 1 1 1 km STORE a",
        "GEORADIUS src 1 1 1 km STOREDIST a",
        "GEORADIUS src 1 1 1 km STOREDIST a STORE b",
        "GEORADIUS src 1 1 1 km STORE a STORE b",
        "GEORADIUS src 1 1 1 km STORE",
        "GEORADIUSBYMEMBER src STORE 1 km STORE a",
        "GEOSEARCHSTORE dst src FROMLONLAT 1 1 BYRADIUS 1 km",
        "GEOADD k 1 1 m",
    ];
    for line in getkeys {
        s.both(&words(&format!("COMMAND GETKEYSANDFLAGS {line}")));
    }
}

#[test]
fn geo_writes_invalidate_watch() {
    let s = TestServer::start();
    let mut c = Raw::connect(s.addr);
    let mut other = Raw::connect(s.addr);
    c.call(&["GEOADD", "src", "13.361389", "38.115556", "Palermo"]);
    let writes: &[&str] = &[
        "GEOADD w 1 1 a",
        "GEORADIUS src 13 38 500 km STORE w",
        "GEORADIUSBYMEMBER src Palermo 10 km STOREDIST w",
        "GEOSEARCHSTORE w src FROMMEMBER Palermo BYRADIUS 1 km",
        // An empty result deletes the destination: a change too.
        "GEOSEARCHSTORE w src FROMLONLAT 0 0 BYRADIUS 1 km",
    ];
    for (i, line) in writes.iter().enumerate() {
        let write = words(line);
        if i == writes.len() - 1 {
            c.call(&["GEOADD", "w", "1", "1", "a"]);
        }
        assert_eq!(c.call(&["WATCH", "w"]), b"+OK\r\n");
        other.call(&write);
        c.call(&["MULTI"]);
        c.call(&["GET", "nothing"]);
        assert_eq!(c.call(&["EXEC"]), b"*-1\r\n", "after {line}");
    }
    // A write that changes nothing leaves the WATCH alone.
    c.call(&["GEOADD", "w", "1", "1", "a"]);
    assert_eq!(c.call(&["WATCH", "w"]), b"+OK\r\n");
    other.call(&["GEOADD", "w", "1", "1", "a"]);
    other.call(&["GEORADIUS", "w", "1", "1", "1", "km"]);
    c.call(&["MULTI"]);
    c.call(&["GET", "nothing"]);
    assert_eq!(c.call(&["EXEC"]), b"*1\r\n$-1\r\n");
}

fn incr_aof(dir: &Path) -> Vec<u8> {
    let path = dir.join("appendonlydir/appendonly.aof.1.incr.aof");
    std::fs::read(&path).unwrap_or_else(|e| {
        let listing: Vec<_> = std::fs::read_dir(dir)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        panic!(
            "cannot read {}: {e}; {dir:?} holds {listing:?}",
            path.display()
        )
    })
}

#[test]
fn geo_writes_are_logged_as_redis_logs_them() {
    // GEOADD is logged as the ZADD it stands for, the STORE forms as
    // themselves; no-ops are not logged. Both servers write their
    // append-only files before replying (appendfsync always), and the
    // files must be the same bytes.
    let redis_dir = std::env::temp_dir().join(format!(
        "goblin-geo-aof-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::create_dir_all(&redis_dir).unwrap();
    let redis = RedisProcess::start_with(&[
        "--dir",
        redis_dir.to_str().unwrap(),
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
    ]);
    let goblin = TestServer::start_with(&[("appendonly", "yes"), ("appendfsync", "always")]);
    // What goblin-server's main does before it serves: open the files.
    goblin_engine::persist::load_on_start(&goblin.engine).unwrap();
    let goblin_dir = goblin.dir.clone();
    let mut s = Servers::with(goblin, redis);
    let seq: &[&str] = &[
        "GEOADD k 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
        "GEOADD k 13.361389 38.115556 Palermo",
        "GEOADD k ch NX 1 2 Palermo 3 4 new",
        "GEOADD k XX CH 5 6 new 7 8 absent",
        "GEOADD nokey XX 1 1 a",
        "GEOADD k 200 0 bad",
        "GEORADIUS k 13 38 500 km STORE d1",
        "GEORADIUS k 13 38 500 km",
        "GEORADIUSBYMEMBER k Catania 500 km STOREDIST d2 COUNT 1",
        "GEOSEARCHSTORE d3 k FROMMEMBER Palermo BYBOX 900 900 km STOREDIST",
        "GEOSEARCHSTORE d3 k FROMLONLAT 0 0 BYRADIUS 1 m",
        "GEOSEARCHSTORE d3 k FROMLONLAT 0 0 BYRADIUS 1 m",
        "GEOSEARCHSTORE d1 missing FROMLONLAT 0 0 BYRADIUS 1 m",
        "MULTI",
        "GEOADD k 9 9 in-multi",
        "GEORADIUS k 9 9 1 km STORE d4",
        "EXEC",
    ];
    for line in seq {
        s.both(&words(line));
    }
    s.both(&[
        "EVAL",
        "return redis.call('GEOADD', KEYS[1], '10', '10', 'scripted')",
        "1",
        "k",
    ]);
    s.same_key("k");
    let g = incr_aof(&goblin_dir);
    let r = incr_aof(&redis_dir);
    assert_eq!(show(&g), show(&r), "the append-only files differ");
    assert!(show(&g).contains("$4\r\nzadd\r\n$1\r\nk\r\n$2\r\nch\r\n$2\r\nNX\r\n"));
    drop(s);
    let _ = std::fs::remove_dir_all(&redis_dir);
}
