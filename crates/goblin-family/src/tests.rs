//! The family's semantics against a model store: a map of keys with TTLs
//! and a settable clock.

use super::*;
use std::collections::{BTreeMap, HashMap};

#[derive(Clone, Debug, PartialEq)]
enum V {
    Str(Vec<u8>),
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    ZSet(BTreeMap<Vec<u8>, f64>),
}

#[derive(Default, Clone, Debug, PartialEq)]
struct Model {
    now: i64,
    keys: HashMap<Vec<u8>, (V, Option<i64>)>,
    effects: Vec<Vec<Vec<u8>>>,
}

impl Model {
    fn live(&mut self, key: &[u8]) -> Option<&mut (V, Option<i64>)> {
        let now = self.now;
        if self
            .keys
            .get(key)
            .is_some_and(|(_, at)| at.is_some_and(|t| t <= now))
        {
            self.keys.remove(key);
        }
        self.keys.get_mut(key)
    }

    fn set_str(&mut self, key: &str, v: &str, ttl: Option<i64>) {
        self.keys.insert(key.into(), (V::Str(v.into()), ttl));
    }

    fn string(&mut self, key: &str) -> Option<String> {
        match self.live(key.as_bytes()) {
            Some((V::Str(s), _)) => Some(String::from_utf8(s.clone()).unwrap()),
            _ => None,
        }
    }

    fn ttl(&mut self, key: &str) -> Option<i64> {
        self.live(key.as_bytes()).and_then(|(_, t)| *t)
    }
}

impl Store for Model {
    fn now_ms(&self) -> i64 {
        self.now
    }

    fn read_string<R>(
        &mut self,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, Error> {
        match self.live(key) {
            None => Ok(f(None)),
            Some((V::Str(s), _)) => Ok(f(Some(s))),
            Some(_) => Err(Error::WrongType),
        }
    }

    fn write_string(&mut self, key: &[u8], value: &[u8]) {
        let ttl = self.live(key).and_then(|(_, t)| *t);
        self.keys
            .insert(key.to_vec(), (V::Str(value.to_vec()), ttl));
    }

    fn delete(&mut self, key: &[u8]) -> bool {
        self.live(key);
        self.keys.remove(key).is_some()
    }

    fn expire_at(&mut self, key: &[u8]) -> Option<Option<i64>> {
        self.live(key).map(|(_, t)| *t)
    }

    fn set_expire_at(&mut self, key: &[u8], at_ms: i64) {
        if let Some((_, t)) = self.live(key) {
            *t = Some(at_ms);
        }
    }

    fn read_hash_field<R>(
        &mut self,
        key: &[u8],
        field: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, Error> {
        match self.live(key) {
            None => Ok(f(None)),
            Some((V::Hash(h), _)) => Ok(f(h.get(field).map(|v| v.as_slice()))),
            Some(_) => Err(Error::WrongType),
        }
    }

    fn write_hash_field(&mut self, key: &[u8], field: &[u8], value: &[u8]) {
        let entry = self
            .keys
            .entry(key.to_vec())
            .or_insert((V::Hash(BTreeMap::new()), None));
        if let V::Hash(h) = &mut entry.0 {
            h.insert(field.to_vec(), value.to_vec());
        }
    }

    fn delete_hash_field(&mut self, key: &[u8], field: &[u8]) -> bool {
        let Some((V::Hash(h), _)) = self.live(key) else {
            return false;
        };
        let removed = h.remove(field).is_some();
        if h.is_empty() {
            self.keys.remove(key);
        }
        removed
    }

    fn remove_scores_up_to(&mut self, key: &[u8], max: f64) -> Result<usize, Error> {
        let z = match self.live(key) {
            None => return Ok(0),
            Some((V::ZSet(z), _)) => z,
            Some(_) => return Err(Error::WrongType),
        };
        let before = z.len();
        z.retain(|_, s| *s > max);
        let removed = before - z.len();
        if z.is_empty() {
            self.keys.remove(key);
        }
        Ok(removed)
    }

    fn score_and_cardinality(&mut self, key: &[u8], member: &[u8]) -> (Option<f64>, usize) {
        match self.live(key) {
            Some((V::ZSet(z), _)) => (z.get(member).copied(), z.len()),
            _ => (None, 0),
        }
    }

    fn set_score(&mut self, key: &[u8], member: &[u8], score: f64) -> f64 {
        let entry = self
            .keys
            .entry(key.to_vec())
            .or_insert((V::ZSet(BTreeMap::new()), None));
        let V::ZSet(z) = &mut entry.0 else {
            unreachable!("ZWINDOW checked the type first");
        };
        z.insert(member.to_vec(), score);
        z.values().copied().fold(f64::NEG_INFINITY, f64::max)
    }

    fn effect(&mut self, argv: &[&[u8]]) {
        self.effects.push(argv.iter().map(|a| a.to_vec()).collect());
    }
}

fn run(m: &mut Model, cmd: &str, args: &[&str]) -> Result<Reply, Error> {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    execute(m, cmd.as_bytes(), &args)
}

/// A rejected call leaves the store exactly as it was.
fn assert_rejected(m: &mut Model, cmd: &str, args: &[&str], expected: Error) {
    let before = m.clone();
    assert_eq!(run(m, cmd, args), Err(expected));
    m.effects.clear();
    assert_eq!(
        *m,
        Model {
            effects: vec![],
            ..before
        }
    );
}

#[test]
fn decrpos_floor_at_zero() {
    let mut m = Model {
        now: 1000,
        ..Default::default()
    };
    m.set_str("stock", "2", Some(5000));
    assert_eq!(run(&mut m, "GOBLIN.DECRPOS", &["stock"]), Ok(Reply::Int(1)));
    assert_eq!(run(&mut m, "goblin.decrpos", &["stock"]), Ok(Reply::Int(0)));
    assert_eq!(
        run(&mut m, "goblin.decrpos", &["stock"]),
        Ok(Reply::Int(-1))
    );
    assert_eq!(m.string("stock").as_deref(), Some("0"));
    assert_eq!(m.ttl("stock"), Some(5000), "the TTL is kept");
    assert_eq!(
        run(&mut m, "goblin.decrpos", &["absent"]),
        Ok(Reply::Int(-1))
    );
    assert!(
        !m.keys.contains_key(&b"absent"[..]),
        "an absent key is not created"
    );
    m.set_str("neg", "-5", None);
    assert_eq!(run(&mut m, "goblin.decrpos", &["neg"]), Ok(Reply::Int(-1)));
    m.set_str("text", "abc", None);
    assert_rejected(&mut m, "goblin.decrpos", &["text"], Error::NotInteger);
    m.set_str("spaced", " 1", None);
    assert_rejected(&mut m, "goblin.decrpos", &["spaced"], Error::NotInteger);
    m.write_hash_field(b"h", b"f", b"1");
    assert_rejected(&mut m, "goblin.decrpos", &["h"], Error::WrongType);
    assert_eq!(
        run(&mut m, "goblin.decrpos", &[]),
        Err(Error::Arity("goblin.decrpos"))
    );
}

#[test]
fn decrbypos_takes_only_what_remains() {
    let mut m = Model::default();
    m.set_str("s", "10", None);
    assert_eq!(
        run(&mut m, "goblin.decrbypos", &["s", "4"]),
        Ok(Reply::Int(6))
    );
    assert_eq!(
        run(&mut m, "goblin.decrbypos", &["s", "6"]),
        Ok(Reply::Int(0))
    );
    assert_eq!(
        run(&mut m, "goblin.decrbypos", &["s", "1"]),
        Ok(Reply::Int(-1))
    );
    assert_rejected(
        &mut m,
        "goblin.decrbypos",
        &["s", "0"],
        Error::Message("amount must be a positive integer"),
    );
    assert_rejected(
        &mut m,
        "goblin.decrbypos",
        &["s", "-3"],
        Error::Message("amount must be a positive integer"),
    );
    assert_rejected(&mut m, "goblin.decrbypos", &["s", "x"], Error::NotInteger);
    m.set_str("max", &i64::MAX.to_string(), None);
    assert_eq!(
        run(&mut m, "goblin.decrbypos", &["max", &i64::MAX.to_string()]),
        Ok(Reply::Int(0))
    );
    m.set_str("min", &i64::MIN.to_string(), None);
    assert_eq!(
        run(&mut m, "goblin.decrbypos", &["min", "1"]),
        Ok(Reply::Int(-1))
    );
}

#[test]
fn decrby_checks_the_mathematical_result() {
    const MIN: &str = "-9223372036854775808";
    const MAX: &str = "9223372036854775807";
    let mut m = Model {
        now: 1000,
        ..Default::default()
    };
    // Subtracting i64::MIN, which DECRBY refuses, is exact here.
    m.set_str("adj", MIN, Some(9000));
    assert_eq!(
        run(&mut m, "GOBLIN.DECRBY", &["adj", MIN]),
        Ok(Reply::Int(0))
    );
    assert_eq!(m.string("adj").as_deref(), Some("0"));
    assert_eq!(m.ttl("adj"), Some(9000), "the TTL is kept");
    // 0 - i64::MIN is 2^63: out of range, nothing changes.
    assert_rejected(&mut m, "goblin.decrby", &["adj", MIN], Error::Overflow);
    m.set_str("neg", "-1", None);
    assert_eq!(
        run(&mut m, "goblin.decrby", &["neg", MIN]),
        Ok(Reply::Int(i64::MAX))
    );
    m.set_str("low", MIN, None);
    assert_rejected(&mut m, "goblin.decrby", &["low", "1"], Error::Overflow);
    assert_eq!(
        run(&mut m, "goblin.decrby", &["low", "-1"]),
        Ok(Reply::Int(i64::MIN + 1))
    );
    m.set_str("high", MAX, None);
    assert_rejected(&mut m, "goblin.decrby", &["high", "-1"], Error::Overflow);
    assert_eq!(
        run(&mut m, "goblin.decrby", &["high", MAX]),
        Ok(Reply::Int(0))
    );
    // An absent key counts from 0; a rejected call does not create it.
    assert_rejected(&mut m, "goblin.decrby", &["absent", MIN], Error::Overflow);
    assert!(!m.keys.contains_key(&b"absent"[..]));
    assert_eq!(
        run(&mut m, "goblin.decrby", &["fresh", "3"]),
        Ok(Reply::Int(-3))
    );
    assert_eq!(m.ttl("fresh"), None, "a new counter has no TTL");
    // An expired key is absent.
    m.set_str("old", "40", Some(1000));
    assert_eq!(
        run(&mut m, "goblin.decrby", &["old", "1"]),
        Ok(Reply::Int(-1))
    );
    assert_eq!(m.ttl("old"), None);
    // The argument is checked before the key.
    m.set_str("text", "abc", None);
    assert_rejected(&mut m, "goblin.decrby", &["text", "1"], Error::NotInteger);
    assert_rejected(&mut m, "goblin.decrby", &["adj", "1.5"], Error::NotInteger);
    assert_rejected(
        &mut m,
        "goblin.decrby",
        &["adj", "-9223372036854775809"],
        Error::NotInteger,
    );
    m.write_hash_field(b"h", b"f", b"1");
    assert_rejected(&mut m, "goblin.decrby", &["h", "1"], Error::WrongType);
    assert_rejected(&mut m, "goblin.decrby", &["h", "x"], Error::NotInteger);
    assert_eq!(
        run(&mut m, "goblin.decrby", &["adj"]),
        Err(Error::Arity("goblin.decrby"))
    );
    assert!(m.effects.is_empty(), "the call itself is what is logged");
}

#[test]
fn incrbound_ceiling_and_edges() {
    let mut m = Model::default();
    assert_eq!(
        run(&mut m, "goblin.incrbound", &["q", "3", "5"]),
        Ok(Reply::Int(3))
    );
    assert_eq!(
        run(&mut m, "goblin.incrbound", &["q", "2", "5"]),
        Ok(Reply::Int(5))
    );
    assert_eq!(
        run(&mut m, "goblin.incrbound", &["q", "1", "5"]),
        Ok(Reply::Int(-1))
    );
    assert_eq!(m.string("q").as_deref(), Some("5"));
    assert_eq!(
        run(&mut m, "goblin.incrbound", &["q", "-7", "5"]),
        Ok(Reply::Int(-2))
    );
    // Above i64::MAX is over any ceiling: -1, not an overflow error.
    m.set_str("big", &i64::MAX.to_string(), None);
    assert_eq!(
        run(
            &mut m,
            "goblin.incrbound",
            &["big", "1", &i64::MAX.to_string()]
        ),
        Ok(Reply::Int(-1))
    );
    // Below i64::MIN is the overflow error, nothing changed.
    m.set_str("small", &i64::MIN.to_string(), None);
    assert_rejected(
        &mut m,
        "goblin.incrbound",
        &["small", "-1", "0"],
        Error::Overflow,
    );
    assert_rejected(
        &mut m,
        "goblin.incrbound",
        &["q", "1", "x"],
        Error::NotInteger,
    );
    // An absent key with a result over the ceiling stays absent.
    assert_eq!(
        run(&mut m, "goblin.incrbound", &["none", "10", "5"]),
        Ok(Reply::Int(-1))
    );
    assert!(m.string("none").is_none());
}

#[test]
fn incrttl_window_never_slides() {
    let mut m = Model {
        now: 10_000,
        ..Default::default()
    };
    assert_eq!(
        run(&mut m, "goblin.incrttl", &["c", "1", "60000"]),
        Ok(Reply::Pair(1, 60000))
    );
    m.now += 1000;
    assert_eq!(
        run(&mut m, "goblin.incrttl", &["c", "1", "60000"]),
        Ok(Reply::Pair(2, 59000))
    );
    assert_eq!(m.ttl("c"), Some(70_000), "the deadline did not move");
    // An existing counter without a TTL receives one.
    m.set_str("p", "7", None);
    assert_eq!(
        run(&mut m, "goblin.incrttl", &["p", "3", "500"]),
        Ok(Reply::Pair(10, 500))
    );
    assert_eq!(m.ttl("p"), Some(m.now + 500));
    // After the window, a fresh one starts.
    m.now += 60_000;
    assert_eq!(
        run(&mut m, "goblin.incrttl", &["c", "5", "100"]),
        Ok(Reply::Pair(5, 100))
    );
    // Its effect names the absolute deadline (it read the clock).
    let deadline = (m.now + 100).to_string();
    assert_eq!(
        m.effects.last().unwrap(),
        &vec![
            b"SET".to_vec(),
            b"c".to_vec(),
            b"5".to_vec(),
            b"PXAT".to_vec(),
            deadline.into_bytes()
        ]
    );
    // Overflow adds no TTL to a persistent counter.
    m.set_str("max", &i64::MAX.to_string(), None);
    assert_rejected(
        &mut m,
        "goblin.incrttl",
        &["max", "1", "100"],
        Error::Overflow,
    );
    assert_rejected(
        &mut m,
        "goblin.incrttl",
        &["c", "1", "0"],
        Error::ExpireTime("goblin.incrttl"),
    );
    assert_rejected(
        &mut m,
        "goblin.incrttl",
        &["c", "1", "-5"],
        Error::ExpireTime("goblin.incrttl"),
    );
    assert_rejected(
        &mut m,
        "goblin.incrttl",
        &["c", "1", "soon"],
        Error::NotInteger,
    );
    assert_rejected(
        &mut m,
        "goblin.incrttl",
        &["c", "1", &i64::MAX.to_string()],
        Error::ExpireTime("goblin.incrttl"),
    );
}

#[test]
fn cad_and_cae_compare_exact_bytes() {
    let mut m = Model {
        now: 100,
        ..Default::default()
    };
    m.set_str("lock", "owner-a", Some(1000));
    assert_eq!(
        run(&mut m, "goblin.cae", &["lock", "owner-b", "5000"]),
        Ok(Reply::Int(0))
    );
    assert_eq!(m.ttl("lock"), Some(1000));
    assert_eq!(
        run(&mut m, "goblin.cae", &["lock", "owner-a", "5000"]),
        Ok(Reply::Int(1))
    );
    assert_eq!(m.ttl("lock"), Some(5100));
    assert_eq!(
        run(&mut m, "goblin.cad", &["lock", "owner-b"]),
        Ok(Reply::Int(0))
    );
    assert_eq!(
        run(&mut m, "goblin.cad", &["lock", "owner-a"]),
        Ok(Reply::Int(1))
    );
    assert_eq!(
        run(&mut m, "goblin.cad", &["lock", "owner-a"]),
        Ok(Reply::Int(0))
    );
    m.set_str("n", "1", None);
    assert_eq!(
        run(&mut m, "goblin.cad", &["n", "1.0"]),
        Ok(Reply::Int(0)),
        "byte comparison, not numeric"
    );
    m.write_hash_field(b"h", b"f", b"v");
    assert_rejected(&mut m, "goblin.cad", &["h", "v"], Error::WrongType);
    assert_rejected(
        &mut m,
        "goblin.cae",
        &["n", "1", "0"],
        Error::ExpireTime("goblin.cae"),
    );
}

#[test]
fn hash_field_compare_and_swap() {
    let mut m = Model::default();
    m.write_hash_field(b"locks", b"job:7", b"worker-a");
    assert_eq!(
        run(&mut m, "goblin.hcad", &["locks", "job:7", "worker-b"]),
        Ok(Reply::Int(0))
    );
    assert_eq!(
        run(
            &mut m,
            "goblin.hcas",
            &["locks", "job:7", "worker-a", "worker-c"]
        ),
        Ok(Reply::Int(1))
    );
    assert_eq!(
        run(&mut m, "goblin.hcas", &["locks", "job:8", "", "x"]),
        Ok(Reply::Int(0)),
        "an absent field is not created"
    );
    assert_eq!(
        run(&mut m, "goblin.hcad", &["locks", "job:7", "worker-c"]),
        Ok(Reply::Int(1))
    );
    assert!(
        !m.keys.contains_key(&b"locks"[..]),
        "deleting the last field deletes the key"
    );
    assert_eq!(
        run(&mut m, "goblin.hcas", &["absent", "f", "a", "b"]),
        Ok(Reply::Int(0))
    );
    assert!(!m.keys.contains_key(&b"absent"[..]));
    m.set_str("s", "x", None);
    assert_rejected(&mut m, "goblin.hcad", &["s", "f", "x"], Error::WrongType);
    assert_rejected(
        &mut m,
        "goblin.hcas",
        &["s", "f", "x", "y"],
        Error::WrongType,
    );
}

#[test]
fn hsetgt_high_water_mark() {
    let mut m = Model::default();
    assert_eq!(
        run(&mut m, "goblin.hsetgt", &["hw", "f", "10"]),
        Ok(Reply::Int(1))
    );
    assert_eq!(
        run(&mut m, "goblin.hsetgt", &["hw", "f", "9"]),
        Ok(Reply::Int(0))
    );
    assert_eq!(
        run(&mut m, "goblin.hsetgt", &["hw", "f", "10"]),
        Ok(Reply::Int(0)),
        "equal is not greater"
    );
    assert_eq!(
        run(&mut m, "goblin.hsetgt", &["hw", "f", "10.5"]),
        Ok(Reply::Int(1))
    );
    // Integers compare exactly even where doubles cannot tell them apart.
    assert_eq!(
        run(&mut m, "goblin.hsetgt", &["hw", "g", "9007199254740992"]),
        Ok(Reply::Int(1))
    );
    assert_eq!(
        run(&mut m, "goblin.hsetgt", &["hw", "g", "9007199254740993"]),
        Ok(Reply::Int(1))
    );
    let mut stored = None;
    m.read_hash_field(b"hw", b"f", |v| stored = v.map(|b| b.to_vec()))
        .unwrap();
    assert_eq!(
        stored.as_deref(),
        Some(&b"10.5"[..]),
        "the text is stored as given"
    );
    assert_rejected(
        &mut m,
        "goblin.hsetgt",
        &["hw", "f", "abc"],
        Error::Message("value is not a valid number"),
    );
    assert_rejected(
        &mut m,
        "goblin.hsetgt",
        &["hw", "f", "inf"],
        Error::Message("value is not a valid number"),
    );
    m.write_hash_field(b"hw", b"t", b"text");
    assert_rejected(
        &mut m,
        "goblin.hsetgt",
        &["hw", "t", "1"],
        Error::Message("hash value is not a valid number"),
    );
}

#[test]
fn zwindow_leases_heal() {
    let mut m = Model {
        now: 1_000,
        ..Default::default()
    };
    for h in ["a", "b", "c"] {
        assert_eq!(
            run(&mut m, "goblin.zwindow", &["sem", "3", "100", h]),
            Ok(Reply::Int(1))
        );
    }
    assert_eq!(
        run(&mut m, "goblin.zwindow", &["sem", "3", "100", "d"]),
        Ok(Reply::Int(0))
    );
    m.now += 50;
    assert_eq!(
        run(&mut m, "goblin.zwindow", &["sem", "3", "100", "a"]),
        Ok(Reply::Int(1)),
        "renewal"
    );
    assert_eq!(m.ttl("sem"), Some(1_150), "expires with its last lease");
    m.now += 60;
    // b and c expired (deadline 1100 <= now 1110): d gets in.
    assert_eq!(
        run(&mut m, "goblin.zwindow", &["sem", "3", "100", "d"]),
        Ok(Reply::Int(1))
    );
    assert_eq!(m.score_and_cardinality(b"sem", b"x").1, 2);
    assert_rejected(
        &mut m,
        "goblin.zwindow",
        &["sem", "0", "100", "x"],
        Error::Message("limit must be a positive integer"),
    );
    assert_rejected(
        &mut m,
        "goblin.zwindow",
        &["sem", "3", "0", "x"],
        Error::ExpireTime("goblin.zwindow"),
    );
    m.set_str("s", "x", None);
    assert_rejected(
        &mut m,
        "goblin.zwindow",
        &["s", "3", "100", "x"],
        Error::WrongType,
    );
}
