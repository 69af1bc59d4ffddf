use super::*;

fn limits(entries: usize) -> NodeLimits {
    NodeLimits {
        max_bytes: 4096,
        max_entries: entries,
    }
}

fn add(e: &mut Entries, id: (u64, u64), fields: &[&[u8]], l: NodeLimits) -> StreamId {
    e.append(fields, NewId::Explicit(StreamId::new(id.0, id.1)), 0, l)
        .unwrap()
}

fn ids(it: Iter<'_>) -> Vec<(u64, u64)> {
    it.map(|e| (e.id.ms, e.id.seq)).collect()
}

fn pairs(e: &EntryRef<'_>) -> Vec<(Vec<u8>, Vec<u8>)> {
    e.fields().map(|(f, v)| (f.to_vec(), v.to_vec())).collect()
}

#[test]
fn entries_round_trip_through_nodes_both_ways() {
    let mut e = Entries::default();
    let l = limits(3);
    for i in 1..=10u64 {
        let v = i.to_string();
        if i % 4 == 0 {
            add(&mut e, (i, 0), &[b"other", v.as_bytes(), b"x", b"y"], l);
        } else {
            add(&mut e, (i, 0), &[b"item", v.as_bytes()], l);
        }
    }
    assert_eq!(e.length, 10);
    // Three entries a node, the first node's master fields reused.
    assert_eq!(e.node_count(), 4);
    let fwd = ids(e.iter());
    assert_eq!(fwd, (1..=10).map(|i| (i, 0)).collect::<Vec<_>>());
    let mut rev = ids(e.range(None, None, true));
    rev.reverse();
    assert_eq!(fwd, rev);
    let fourth = e
        .range(Some(StreamId::new(4, 0)), None, false)
        .next()
        .unwrap();
    assert_eq!(
        pairs(&fourth),
        vec![
            (b"other".to_vec(), b"4".to_vec()),
            (b"x".to_vec(), b"y".to_vec())
        ]
    );
    assert_eq!(
        ids(e.range(Some(StreamId::new(3, 1)), Some(StreamId::new(7, 0)), false)),
        vec![(4, 0), (5, 0), (6, 0), (7, 0)]
    );
    assert_eq!(
        ids(e.range(Some(StreamId::new(3, 1)), Some(StreamId::new(7, 0)), true)),
        vec![(7, 0), (6, 0), (5, 0), (4, 0)]
    );
    for (_, lp) in e.nodes() {
        assert!(validate_node(lp));
    }
}

#[test]
fn ids_are_checked_and_generated() {
    let mut e = Entries::default();
    let l = limits(100);
    assert_eq!(
        e.append(&[b"a", b"1"], NewId::Explicit(StreamId::MIN), 0, l),
        Err(AppendError::IdTooSmall)
    );
    assert_eq!(
        e.append(&[b"a", b"1"], NewId::Auto, 1000, l),
        Ok(StreamId::new(1000, 0))
    );
    // The clock went back: the sequence grows instead.
    assert_eq!(
        e.append(&[b"a", b"1"], NewId::Auto, 999, l),
        Ok(StreamId::new(1000, 1))
    );
    assert_eq!(
        e.append(&[b"a", b"1"], NewId::AutoSeq(1000), 0, l),
        Ok(StreamId::new(1000, 2))
    );
    assert_eq!(
        e.append(&[b"a", b"1"], NewId::AutoSeq(5), 0, l),
        Err(AppendError::IdTooSmall)
    );
    add(&mut e, (1000, u64::MAX), &[b"a", b"1"], l);
    assert_eq!(
        e.append(&[b"a", b"1"], NewId::AutoSeq(1000), 0, l),
        Err(AppendError::SeqExhausted)
    );
    // A delta from the master ID larger than i64 still decodes.
    add(&mut e, (u64::MAX, 0), &[b"a", b"1"], l);
    assert_eq!(e.last_valid_id(), StreamId::new(u64::MAX, 0));
}

#[test]
fn deletes_mark_tombstones_and_drop_empty_nodes() {
    let mut e = Entries::default();
    let l = limits(2);
    for i in 1..=5 {
        add(&mut e, (i, 0), &[b"f", b"v"], l);
    }
    assert!(e.delete(StreamId::new(2, 0)));
    assert!(!e.delete(StreamId::new(2, 0)));
    assert!(!e.delete(StreamId::new(9, 0)));
    assert_eq!(ids(e.iter()), vec![(1, 0), (3, 0), (4, 0), (5, 0)]);
    assert_eq!(
        ids(e.range(None, None, false).with_tombstones()),
        vec![(1, 0), (2, 0), (3, 0), (4, 0), (5, 0)]
    );
    assert!(e.delete(StreamId::new(1, 0)));
    assert_eq!(e.node_count(), 2);
    assert_eq!(e.length, 3);
    for (_, lp) in e.nodes() {
        assert!(validate_node(lp));
    }
}

#[test]
fn trimming_by_length_and_id() {
    let mut e = Entries::default();
    let l = limits(10);
    for i in 1..=100 {
        add(&mut e, (i, 0), &[b"f", b"v"], l);
    }
    let approx = |n| Trim {
        strategy: TrimStrategy::MaxLen(n),
        approx: true,
        limit: 0,
    };
    // Whole nodes only: 100 -> 60 removes four nodes.
    assert_eq!(e.trim(approx(55)), 40);
    assert_eq!(e.length, 60);
    let exact = Trim {
        strategy: TrimStrategy::MaxLen(55),
        approx: false,
        limit: 0,
    };
    assert_eq!(e.trim(exact), 5);
    assert_eq!(e.first_id, StreamId::new(46, 0));
    let by_id = Trim {
        strategy: TrimStrategy::MinId(StreamId::new(72, 0)),
        approx: false,
        limit: 0,
    };
    assert_eq!(e.trim(by_id), 26);
    assert_eq!(e.first_id, StreamId::new(72, 0));
    assert_eq!(e.length, 29);
    let limited = Trim {
        strategy: TrimStrategy::MaxLen(0),
        approx: true,
        limit: 5,
    };
    assert_eq!(e.trim(limited), 0);
}

#[test]
fn radix_tree_nodes_follow_rax() {
    let mut e = Entries::default();
    assert_eq!(e.radix_tree_nodes(), 1);
    add(&mut e, (1, 0), &[b"f", b"v"], limits(1));
    // The root, compressed over all sixteen bytes, and the key's leaf.
    assert_eq!(e.radix_tree_nodes(), 2);
    add(&mut e, (2, 0), &[b"f", b"v"], limits(1));
    // Root (7 shared bytes), a branch on the 8th, two compressed tails,
    // two leaves.
    assert_eq!(e.radix_tree_nodes(), 6);
}
