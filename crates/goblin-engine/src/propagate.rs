//! Propagation: what the append-only file and the replicas are sent. A
//! change reaches them as records (commands with their database), encoded
//! as RESP arrays, several of a command wrapped in MULTI/EXEC, and written
//! by [`emit`], the one writer that feeds the file, the replicas and the
//! backlog. What a command propagates is decided in `engine::call` (the
//! call itself, or the effects it described through `Ctx::propagate_as`);
//! keys expired or evicted outside a command go through
//! `Engine::propagate_expired` and eviction, both to [`emit`].

use crate::persist::aof::Aof;
use crate::repl::Replication;

/// Appends one command as a RESP array of bulk strings.
pub fn encode_command<A: AsRef<[u8]>>(out: &mut Vec<u8>, argv: &[A]) {
    let mut num = itoa::Buffer::new();
    out.push(b'*');
    out.extend_from_slice(num.format(argv.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in argv {
        let a = a.as_ref();
        out.push(b'$');
        out.extend_from_slice(num.format(a.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// A command to propagate, with the database it ran in.
#[derive(Clone, Debug)]
pub struct Record {
    pub db: usize,
    pub argv: Vec<Vec<u8>>,
}

/// Wraps several records in MULTI/EXEC, as Redis's propagatePendingCommands
/// does for what one command, transaction or script changed.
pub fn wrap_in_transaction(records: &mut Vec<Record>) {
    if records.len() < 2 {
        return;
    }
    let first = records[0].db;
    let last = records[records.len() - 1].db;
    records.insert(
        0,
        Record {
            db: first,
            argv: vec![b"MULTI".to_vec()],
        },
    );
    records.push(Record {
        db: last,
        argv: vec![b"EXEC".to_vec()],
    });
}

/// The keys that expired in a held shard since it was last looked at, as
/// the DELs (HDELs for hash fields) that a replay, which runs without a
/// clock, needs at the same point of the stream.
pub fn collect_expired(shard: &mut crate::keyspace::Shard, out: &mut Vec<Record>) {
    use crate::keyspace::db::Expired;
    for (i, db) in shard.dbs.iter_mut().enumerate() {
        for e in db.expired_records.drain(..) {
            let argv = match e {
                Expired::Key(key) => vec![b"DEL".to_vec(), key.to_vec()],
                Expired::Fields(key, fields) => {
                    let mut argv = vec![b"HDEL".to_vec(), key.to_vec()];
                    argv.extend(fields);
                    argv
                }
            };
            out.push(Record { db: i, argv });
        }
    }
}

/// Where [`emit`] left records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Emitted {
    /// The append-only file's offset after them, when they were appended
    /// (what a reply under `appendfsync always` waits for).
    pub file_end: Option<u64>,
    /// The replication stream's offset after them, when replicas are fed
    /// (what WAIT counts acknowledgements against).
    pub stream_offset: Option<u64>,
}

/// The one writer of propagated records: to the append-only file when it
/// is on and `to_file` (a call for the replicas only, PUBLISH, stays out
/// of the file), and to the replication stream (the replicas and the
/// backlog) while it is fed. A replica's stream is its primary's, passed
/// on as it came, so a replica appends nothing of its own to it. Called
/// while the writer still holds the shards it changed, so that both see
/// the changes of a key in the order they happened.
pub fn emit(aof: &Aof, repl: &Replication, records: &[Record], to_file: bool) -> Emitted {
    let mut emitted = Emitted::default();
    if records.is_empty() {
        return emitted;
    }
    if to_file && aof.is_on() {
        emitted.file_end = Some(aof.append(records));
    }
    if repl.stream.feeding() {
        if !repl.is_replica() {
            repl.stream.append(records);
        }
        emitted.stream_offset = Some(repl.stream.offset());
    }
    emitted
}

/// Commands already encoded, to the replication stream as they are: a
/// replica passing its primary's stream on to its own replicas, and
/// DEBUG REPLICATE.
pub fn emit_encoded(repl: &Replication, bytes: &[u8]) {
    repl.stream.append_bytes(bytes);
}
