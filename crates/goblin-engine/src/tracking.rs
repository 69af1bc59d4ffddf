//! Client-side caching: CLIENT TRACKING's tables and its invalidation
//! messages (Redis's tracking.c).
//!
//! **The tracking table** remembers, for each key a tracking client read
//! (a command flagged READONLY, in default mode), the ids of the clients
//! that may hold it in a local cache. It is split like the keyspace: one
//! [`Dict`] per shard, behind a mutex of its own that is only taken by a
//! thread holding the keyspace shard of the key (the reader remembering
//! its keys, the writer invalidating them), so it is never contended by
//! commands and a read and a later write of one key are ordered by the
//! shard lock: a write that follows a read always finds the reader in the
//! table. Like Redis's, the table does not know databases.
//!
//! **The prefix table** (BCAST mode) maps each prefix to the clients
//! subscribed to it. A command collects the keys it changed while
//! anybody uses BCAST (`Pending::bcast`); when the command ends, every
//! prefix that matches some of them sends the matching keys, in one
//! message, to each of its clients, as Redis sends the keys a turn of its
//! event loop collected.
//!
//! **Invalidation.** Every change of a key goes through
//! `Ctx::modified` (the one place WATCH hears of it too), expiries and
//! evictions through the databases' recorded events and the evictor, and
//! FLUSHDB, FLUSHALL and SWAPDB send the null invalidation ("every key")
//! to every tracking client. A message for another client goes into its
//! mailbox, as a Pub/Sub message does (see `crate::pubsub`): a RESP3 push
//! `invalidate [keys]`, or, for a RESP2 client that redirects to a
//! subscribed RESP2 client, a message on `__redis__:invalidate`. A message
//! for the client whose command caused it waits in its `Pending` and
//! follows the command's reply (Redis's tracking_pending_keys).
//!
//! While no client tracks, a write pays one relaxed load.

use crate::client::ClientInfo;
use crate::keyspace::{CompactBytes, Dict};
use crate::protocol::ReplyWriter;
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// The bits of `ClientInfo::tracking`: the flags other threads read, over
/// the id of the client the messages are redirected to (0: none).
pub mod bits {
    pub const ON: u64 = 1 << 63;
    pub const BCAST: u64 = 1 << 62;
    pub const NOLOOP: u64 = 1 << 61;
    pub const BROKEN_REDIR: u64 = 1 << 60;
    pub const OPTIN: u64 = 1 << 59;
    pub const OPTOUT: u64 = 1 << 58;
    pub const REDIRECT: u64 = (1 << 56) - 1;
}

/// What `CLIENT TRACKING ON` asks for.
#[derive(Default, Debug, Clone)]
pub struct Options {
    pub redirect: u64,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    pub prefixes: Vec<Vec<u8>>,
}

/// One client's side of tracking, in its `ClientState`.
#[derive(Default)]
pub struct ClientTracking {
    /// Its BCAST prefixes, in order (CLIENT TRACKINGINFO lists them so).
    pub prefixes: Vec<Vec<u8>>,
    /// CLIENT CACHING yes (OPTIN) or no (OPTOUT) for the next command.
    pub caching: bool,
    /// It put its id in the tracking table since tracking was turned on:
    /// turning it off looks for it there.
    pub remembered: bool,
    /// What its commands caused that waits for the end of the command.
    pub pending: Pending,
    /// Set on a script's client while the script runs: the calling client
    /// (its id stands for the writer) and, when it tracks and may cache,
    /// the keys the script declared, remembered for it once the script
    /// runs a read-only command (Redis's trackingRememberKeys of the
    /// script caller).
    pub script_caller: u64,
    pub script_keys: Option<Vec<Vec<u8>>>,
}

/// What one command (or one pass of the expiry cycle, one eviction)
/// caused: the keys it changed while BCAST clients exist, and the
/// messages for the writer itself, which follow its reply.
#[derive(Default)]
pub struct Pending {
    /// The writer's client id (0: no client, as for the expiry cycle).
    pub id: u64,
    /// Keys changed, and whether by the writer itself (false for an
    /// expiry): a NOLOOP client is not told of its own changes.
    pub bcast: Vec<(CompactBytes, bool)>,
    /// Encoded pushes for the writer itself.
    pub own: Vec<u8>,
}

/// The clients that read a key: usually one.
// The Vec is boxed so that an entry keeps one reader inline in 16 bytes.
#[allow(clippy::box_collection)]
pub(crate) enum Readers {
    One(u64),
    Many(Box<Vec<u64>>),
}

impl Readers {
    fn contains(&self, id: u64) -> bool {
        match self {
            Readers::One(x) => *x == id,
            Readers::Many(v) => v.contains(&id),
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Readers::One(_) => 1,
            Readers::Many(v) => v.len(),
        }
    }

    pub(crate) fn ids(&self) -> &[u64] {
        match self {
            Readers::One(x) => std::slice::from_ref(x),
            Readers::Many(v) => v,
        }
    }

    /// Removes `id`; true when it was there.
    fn remove(&mut self, id: u64) -> bool {
        match self {
            Readers::One(x) => *x == id,
            Readers::Many(v) => match v.iter().position(|x| *x == id) {
                Some(i) => {
                    v.swap_remove(i);
                    true
                }
                None => false,
            },
        }
    }
}

/// Bytes an entry of the tracking table is charged (its node: link, key,
/// readers), beside the key's own heap bytes and its bucket.
const ENTRY: usize = 48 + 8;

/// One engine's tracking state.
pub struct Tracking {
    /// The tracking table, one part per keyspace shard.
    pub(crate) tables: Box<[Mutex<Dict<Readers>>]>,
    /// BCAST: prefix -> ids of the clients subscribed to it.
    pub(crate) prefixes: RwLock<BTreeMap<Box<[u8]>, Vec<u64>>>,
    pub(crate) prefix_count: AtomicUsize,
    /// The tracking clients, by id (the table holds ids).
    pub(crate) clients: RwLock<HashMap<u64, Arc<ClientInfo>>>,
    /// Clients with tracking on (INFO's tracking_clients): while zero,
    /// nothing here is looked at.
    pub(crate) count: AtomicUsize,
    keys: AtomicU64,
    items: AtomicU64,
    bytes: AtomicU64,
    /// tracking-table-max-keys (0: no limit).
    max_keys: AtomicU64,
    /// Rounds in a row that could not bring the table under the limit
    /// (Redis's timeout_counter: each one tries harder).
    pub(crate) effort_rounds: AtomicU32,
}

impl Tracking {
    pub fn new(shards: usize) -> Tracking {
        Tracking {
            tables: (0..shards).map(|_| Mutex::new(Dict::new())).collect(),
            prefixes: RwLock::new(BTreeMap::new()),
            prefix_count: AtomicUsize::new(0),
            clients: RwLock::new(HashMap::new()),
            count: AtomicUsize::new(0),
            keys: AtomicU64::new(0),
            items: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            max_keys: AtomicU64::new(1_000_000),
            effort_rounds: AtomicU32::new(0),
        }
    }

    /// Whether any client tracks (one relaxed load).
    #[inline]
    pub fn active(&self) -> bool {
        self.count.load(Relaxed) != 0
    }

    /// INFO's tracking_clients.
    pub fn clients(&self) -> usize {
        self.count.load(Relaxed)
    }

    /// INFO's tracking_total_keys.
    pub fn total_keys(&self) -> u64 {
        self.keys.load(Relaxed)
    }

    /// INFO's tracking_total_items.
    pub fn total_items(&self) -> u64 {
        self.items.load(Relaxed)
    }

    /// INFO's tracking_total_prefixes.
    pub fn total_prefixes(&self) -> usize {
        self.prefix_count.load(Relaxed)
    }

    /// What the tables hold, for used_memory.
    pub fn memory(&self) -> u64 {
        self.bytes.load(Relaxed)
    }

    pub fn set_max_keys(&self, n: u64) {
        self.max_keys.store(n, Relaxed);
    }

    /// Whether the table holds more keys than tracking-table-max-keys.
    #[inline]
    pub fn over_limit(&self) -> bool {
        let max = self.max_keys.load(Relaxed);
        max != 0 && self.keys.load(Relaxed) > max
    }

    pub(crate) fn has_prefixes(&self) -> bool {
        self.prefix_count.load(Relaxed) != 0
    }

    /// Remembers that client `id` read `key` (of keyspace shard `shard`,
    /// which the caller holds).
    pub fn remember(&self, shard: usize, hash: u64, key: &[u8], id: u64) -> bool {
        let mut table = self.tables[shard].lock();
        match table.get_mut(hash, key) {
            Some(readers) => {
                if readers.contains(id) {
                    return false;
                }
                match readers {
                    Readers::One(x) => *readers = Readers::Many(Box::new(vec![*x, id])),
                    Readers::Many(v) => v.push(id),
                }
                self.items.fetch_add(1, Relaxed);
            }
            None => {
                table.insert_new(hash, CompactBytes::from_slice(key), Readers::One(id));
                self.keys.fetch_add(1, Relaxed);
                self.items.fetch_add(1, Relaxed);
                self.bytes.fetch_add(entry_bytes(key.len()) as u64, Relaxed);
            }
        }
        true
    }

    /// Takes the readers of `key` out of the table.
    pub(crate) fn take(&self, shard: usize, hash: u64, key: &[u8]) -> Option<Readers> {
        let mut table = self.tables[shard].lock();
        let (_, readers) = table.remove(hash, key)?;
        self.forget_entry(key.len(), readers.len());
        Some(readers)
    }

    pub(crate) fn forget_entry(&self, key_len: usize, items: usize) {
        self.keys.fetch_sub(1, Relaxed);
        self.items.fetch_sub(items as u64, Relaxed);
        self.bytes.fetch_sub(entry_bytes(key_len) as u64, Relaxed);
    }

    pub(crate) fn target(&self, id: u64) -> Option<Arc<ClientInfo>> {
        self.clients.read().get(&id).cloned()
    }

    /// Removes client `id` from every entry of the table.
    pub(crate) fn sweep(&self, id: u64) {
        for table in self.tables.iter() {
            let mut table = table.lock();
            let mut emptied = Vec::new();
            for (key, readers) in table.iter() {
                if readers.contains(id) {
                    emptied.push((key.clone(), readers.len() == 1));
                }
            }
            for (key, last) in emptied {
                let hash = crate::keyspace::hash_key(&key);
                if last {
                    if table.remove(hash, &key).is_some() {
                        self.forget_entry(key.len(), 1);
                    }
                } else if let Some(r) = table.get_mut(hash, &key) {
                    if r.remove(id) {
                        self.items.fetch_sub(1, Relaxed);
                    }
                }
            }
        }
    }

    /// Empties the table (FLUSHALL, FLUSHDB, SWAPDB).
    pub(crate) fn clear(&self) {
        for table in self.tables.iter() {
            let mut table = table.lock();
            if table.is_empty() {
                continue;
            }
            let old = std::mem::take(&mut *table);
            drop(table);
            for (key, readers) in old.iter() {
                self.forget_entry(key.len(), readers.len());
            }
        }
    }
}

fn entry_bytes(key_len: usize) -> usize {
    ENTRY + crate::keyspace::memory::key_heap(key_len)
}

/// What an invalidation message says.
pub(crate) enum Payload<'a> {
    /// One key.
    Key(&'a [u8]),
    /// An array of keys, already encoded (BCAST).
    Encoded(&'a [u8]),
    /// Every key (a flush): RESP's null, in the tracking client's protocol.
    Null,
}

/// An array of bulk strings.
pub(crate) fn encode_keys<'k>(keys: impl Iterator<Item = &'k [u8]> + Clone) -> Vec<u8> {
    let n = keys.clone().count();
    let mut out = Vec::with_capacity(16 + keys.clone().map(|k| k.len() + 16).sum::<usize>());
    let mut b = itoa::Buffer::new();
    out.push(b'*');
    out.extend_from_slice(b.format(n).as_bytes());
    out.extend_from_slice(b"\r\n");
    for k in keys {
        out.push(b'$');
        out.extend_from_slice(b.format(k.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(k);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Whether a client in tracking mode `word` keeps what it reads now: not
/// in OPTIN mode without CLIENT CACHING yes, nor in OPTOUT mode after
/// CLIENT CACHING no.
#[inline]
pub fn may_cache(word: u64, caching: bool) -> bool {
    if word & bits::ON == 0 || word & bits::BCAST != 0 {
        return false;
    }
    !((word & bits::OPTIN != 0 && !caching) || (word & bits::OPTOUT != 0 && caching))
}

/// Writes the messages a command caused for its own client after its
/// reply, as pushes (CLIENT REPLY OFF does not drop them).
pub(crate) fn write_own(pending: &mut Pending, out: &mut ReplyWriter) {
    if pending.own.is_empty() {
        return;
    }
    let start = out.len();
    out.raw(&pending.own);
    pending.own.clear();
    out.mark_push(start);
}

/// The keys whose values `events` say expired (whole keys, or fields of
/// a hash), for their invalidations.
pub(crate) fn expired_keys(events: &[crate::keyspace::db::DbEvent], out: &mut Vec<CompactBytes>) {
    use crate::keyspace::db::DbEvent;
    for e in events {
        match e {
            DbEvent::Expired(key) | DbEvent::FieldsExpired { key, .. } => out.push(key.clone()),
            DbEvent::New(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caching_follows_optin_and_optout() {
        let on = bits::ON;
        assert!(may_cache(on, false));
        assert!(!may_cache(0, false));
        assert!(!may_cache(on | bits::BCAST, false));
        assert!(!may_cache(on | bits::OPTIN, false));
        assert!(may_cache(on | bits::OPTIN, true));
        assert!(may_cache(on | bits::OPTOUT, false));
        assert!(!may_cache(on | bits::OPTOUT, true));
    }

    #[test]
    fn keys_are_encoded_as_an_array_of_bulks() {
        let keys: [&[u8]; 2] = [b"a", b"bc"];
        assert_eq!(
            encode_keys(keys.iter().copied()),
            b"*2\r\n$1\r\na\r\n$2\r\nbc\r\n"
        );
    }

    #[test]
    fn the_table_counts_keys_items_and_bytes_both_ways() {
        let t = Tracking::new(4);
        let key = b"k";
        let h = crate::keyspace::hash_key(key);
        assert!(t.remember(0, h, key, 1));
        assert!(!t.remember(0, h, key, 1));
        assert!(t.remember(0, h, key, 2));
        assert_eq!((t.total_keys(), t.total_items()), (1, 2));
        assert!(t.memory() > 0);
        t.sweep(1);
        assert_eq!((t.total_keys(), t.total_items()), (1, 1));
        let readers = t.take(0, h, key).expect("still read by 2");
        assert_eq!(readers.ids(), &[2]);
        assert_eq!((t.total_keys(), t.total_items(), t.memory()), (0, 0, 0));
        t.remember(1, h, key, 3);
        t.clear();
        assert_eq!((t.total_keys(), t.total_items(), t.memory()), (0, 0, 0));
    }
}
