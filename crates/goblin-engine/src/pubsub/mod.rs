//! Pub/Sub: who listens to which channels, and how a published message
//! reaches them across threads (Redis's pubsub.c).
//!
//! # The registry
//!
//! [`PubSub`] holds three namespaces, as Redis does: channels (SUBSCRIBE),
//! patterns (PSUBSCRIBE) and shard channels (SSUBSCRIBE). Channels and
//! shard channels are split into [`SLOTS`] tables by the channel's hash,
//! each behind its own mutex, so that publishers to different channels
//! rarely meet; patterns are one table behind a read-write lock (every
//! publish reads it, only PSUBSCRIBE and PUNSUBSCRIBE write it). Each entry
//! lists the subscribed clients' [`ClientInfo`]. What a client is subscribed
//! to is also kept on its own side ([`Subscriptions`], in its
//! `ClientState`), so that it can leave everything on UNSUBSCRIBE without
//! arguments, RESET or disconnect without searching the registry.
//!
//! # Delivery
//!
//! PUBLISH encodes the message once and appends it to the [`Mailbox`] of
//! each subscriber (in that client's `ClientInfo`), then wakes the
//! subscriber's connection (`ClientInfo::wake`), which writes what its
//! mailbox holds to the socket even when the client sends nothing. So a
//! message to N subscribers costs N appends under N uncontended locks,
//! on the publisher's thread, whatever threads the subscribers are served
//! by. A publish holds its channel's table while it delivers, patterns
//! included, so every subscriber of a channel sees its messages in the
//! same order. A message for the publishing client itself (a RESP3
//! client publishing to a channel it listens to, a keyspace notification
//! of its own write) is written straight into its reply buffer, before the
//! command's reply, as Redis does.
//!
//! While nobody subscribes to anything, PUBLISH and keyspace notifications
//! cost one atomic load; a command of a client that subscribes to nothing
//! pays nothing at all.
//!
//! # Output limits
//!
//! A subscriber that does not read lets its mailbox grow; the `pubsub`
//! class of `client-output-buffer-limit` closes it past the hard limit, or
//! past the soft limit for longer than its seconds, as Redis does.

use crate::client::ClientInfo;
use crate::protocol::ReplyWriter;
use crate::util::glob::glob_match;
use parking_lot::{Mutex, RwLock};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Tables per namespace of channels.
pub const SLOTS: usize = 64;

/// The three namespaces of subscriptions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// SUBSCRIBE / UNSUBSCRIBE / PUBLISH.
    Channel,
    /// PSUBSCRIBE / PUNSUBSCRIBE.
    Pattern,
    /// SSUBSCRIBE / SUNSUBSCRIBE / SPUBLISH.
    Shard,
}

impl Kind {
    /// The first element of a subscription confirmation.
    pub fn subscribe_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"subscribe",
            Kind::Pattern => b"psubscribe",
            Kind::Shard => b"ssubscribe",
        }
    }

    pub fn unsubscribe_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"unsubscribe",
            Kind::Pattern => b"punsubscribe",
            Kind::Shard => b"sunsubscribe",
        }
    }
}

type Subscribers = Vec<Arc<ClientInfo>>;
type Map = HashMap<Box<[u8]>, Subscribers, foldhash::fast::RandomState>;

/// The channels of one namespace, split by hash.
struct ChannelTable {
    slots: Box<[Mutex<Map>]>,
    /// Channels with at least one subscriber (INFO pubsub_channels).
    distinct: AtomicUsize,
    hasher: foldhash::fast::RandomState,
}

impl ChannelTable {
    fn new() -> ChannelTable {
        ChannelTable {
            slots: (0..SLOTS).map(|_| Mutex::new(Map::default())).collect(),
            distinct: AtomicUsize::new(0),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    fn slot(&self, channel: &[u8]) -> &Mutex<Map> {
        use std::hash::BuildHasher;
        let h = self.hasher.hash_one(channel);
        &self.slots[(h as usize) & (SLOTS - 1)]
    }

    fn add(&self, channel: &[u8], client: &Arc<ClientInfo>) {
        let mut map = self.slot(channel).lock();
        match map.get_mut(channel) {
            Some(subs) => subs.push(client.clone()),
            None => {
                map.insert(channel.into(), vec![client.clone()]);
                self.distinct.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn remove(&self, channel: &[u8], id: u64) {
        let mut map = self.slot(channel).lock();
        remove_subscriber(&mut map, channel, id, &self.distinct);
    }

    fn numsub(&self, channel: &[u8]) -> usize {
        self.slot(channel)
            .lock()
            .get(channel)
            .map_or(0, |s| s.len())
    }

    fn names(&self, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for slot in self.slots.iter() {
            for name in slot.lock().keys() {
                if pattern.is_none_or(|p| glob_match(p, name, false)) {
                    out.push(name.to_vec());
                }
            }
        }
        out
    }
}

/// Removes client `id` from the subscribers of `name`, and the entry when
/// it was the last (so that abandoned channels cost nothing).
fn remove_subscriber(map: &mut Map, name: &[u8], id: u64, distinct: &AtomicUsize) {
    let Some(subs) = map.get_mut(name) else {
        return;
    };
    if let Some(i) = subs.iter().position(|c| c.id == id) {
        subs.swap_remove(i);
    }
    if subs.is_empty() {
        map.remove(name);
        distinct.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The `pubsub` class of client-output-buffer-limit, in bytes and seconds.
#[derive(Default)]
struct OutputLimits {
    hard: AtomicU64,
    soft: AtomicU64,
    soft_seconds: AtomicU64,
}

/// The subscription registry, and the keyspace notification settings that
/// publish through it.
pub struct PubSub {
    channels: ChannelTable,
    shard_channels: ChannelTable,
    patterns: RwLock<Map>,
    /// Patterns with at least one subscriber (PUBSUB NUMPAT): while zero,
    /// a publish does not look at the patterns.
    distinct_patterns: AtomicUsize,
    /// Subscriptions of all kinds and clients: while zero, a publish
    /// returns at once.
    subscriptions: AtomicUsize,
    limits: OutputLimits,
    /// The memory accounting of the engine's clients: a message left in a
    /// mailbox counts at once (Redis updates a subscriber's memory as it
    /// publishes to it).
    memory: Arc<crate::client::ClientMemory>,
    /// The command names CLIENT LIST shows, for the line logged about a
    /// client closed for its output limit.
    command_names: crate::client::CommandNames,
    /// `notify-keyspace-events` as Redis's NOTIFY_* bits (see [`notify`]).
    pub notify_flags: AtomicU32,
}

impl Default for PubSub {
    fn default() -> Self {
        PubSub::new(Default::default(), Default::default())
    }
}

/// The publishing client, when it is itself subscribed: messages for it
/// go into its reply buffer directly (see the module docs).
pub struct Publisher<'a> {
    pub info: &'a ClientInfo,
    pub out: &'a mut ReplyWriter,
}

impl PubSub {
    pub fn new(
        memory: Arc<crate::client::ClientMemory>,
        command_names: crate::client::CommandNames,
    ) -> PubSub {
        PubSub {
            memory,
            command_names,
            channels: ChannelTable::new(),
            shard_channels: ChannelTable::new(),
            patterns: RwLock::new(Map::default()),
            distinct_patterns: AtomicUsize::new(0),
            subscriptions: AtomicUsize::new(0),
            limits: OutputLimits::default(),
            notify_flags: AtomicU32::new(0),
        }
    }

    fn table(&self, kind: Kind) -> &ChannelTable {
        match kind {
            Kind::Shard => &self.shard_channels,
            _ => &self.channels,
        }
    }

    /// Whether any client subscribes to anything.
    #[inline]
    pub fn has_subscribers(&self) -> bool {
        self.subscriptions.load(Ordering::Acquire) != 0
    }

    /// Distinct channels with subscribers (INFO pubsub_channels).
    pub fn channel_count(&self) -> usize {
        self.channels.distinct.load(Ordering::Relaxed)
    }

    /// Distinct patterns with subscribers (PUBSUB NUMPAT, INFO pubsub_patterns).
    pub fn pattern_count(&self) -> usize {
        self.distinct_patterns.load(Ordering::Relaxed)
    }

    /// Distinct shard channels with subscribers (INFO pubsubshard_channels).
    pub fn shard_channel_count(&self) -> usize {
        self.shard_channels.distinct.load(Ordering::Relaxed)
    }

    /// PUBSUB NUMSUB / SHARDNUMSUB: subscribers of a channel, patterns aside.
    pub fn numsub(&self, kind: Kind, channel: &[u8]) -> usize {
        self.table(kind).numsub(channel)
    }

    /// PUBSUB CHANNELS / SHARDCHANNELS: the channels with subscribers,
    /// those matching `pattern` when given.
    pub fn channels(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        self.table(kind).names(pattern)
    }

    /// Leaves every subscription of a client without confirming (RESET, a
    /// disconnect); messages already delivered go to `out` when given.
    pub fn leave_all(
        &self,
        client: &mut crate::client::ClientState,
        out: Option<&mut ReplyWriter>,
    ) {
        let Some(mut subs) = client.pubsub.take() else {
            return;
        };
        self.leave(&client.info, &mut subs);
        match out {
            Some(out) => {
                client.info.mailbox.drain_into(out);
            }
            None => client.info.mailbox.clear(),
        }
    }

    /// Sets `notify-keyspace-events` (Redis's NOTIFY_* bits).
    pub fn set_notify_flags(&self, flags: u32) {
        self.notify_flags.store(flags, Ordering::Relaxed);
    }

    /// Redis's notifyKeyspaceEvent, once the class is known to be on: a
    /// `__keyspace@<db>__:<key>` message `event` and a
    /// `__keyevent@<db>__:<event>` message `key`, as the flags ask.
    pub fn keyspace_event(
        &self,
        flags: u32,
        db: usize,
        event: &[u8],
        key: &[u8],
        mut publisher: Option<Publisher<'_>>,
    ) {
        if !self.has_subscribers() {
            return;
        }
        let mut dbnum = itoa::Buffer::new();
        let dbnum = dbnum.format(db).as_bytes();
        let channel = |prefix: &[u8], name: &[u8]| {
            let mut c = Vec::with_capacity(prefix.len() + dbnum.len() + 3 + name.len());
            c.extend_from_slice(prefix);
            c.extend_from_slice(dbnum);
            c.extend_from_slice(b"__:");
            c.extend_from_slice(name);
            c
        };
        if flags & notify::KEYSPACE != 0 {
            let ch = channel(b"__keyspace@", key);
            self.publish(Kind::Channel, &ch, event, reborrow(&mut publisher));
        }
        if flags & notify::KEYEVENT != 0 {
            let ch = channel(b"__keyevent@", event);
            self.publish(Kind::Channel, &ch, key, reborrow(&mut publisher));
        }
    }

    /// Publishes, in order, the key creations and expiries database `db`
    /// recorded (see `keyspace::db::DbEvent`).
    pub fn db_events(
        &self,
        db: usize,
        events: Vec<crate::keyspace::db::DbEvent>,
        mut publisher: Option<Publisher<'_>>,
    ) {
        use crate::keyspace::db::DbEvent;
        let flags = self.notify_flags.load(Ordering::Relaxed);
        let event = |class: u32, name: &[u8], key: &[u8], p: Option<Publisher<'_>>| {
            if flags & class != 0 {
                self.keyspace_event(flags, db, name, key, p);
            }
        };
        for e in events {
            match e {
                DbEvent::New(key) => event(notify::NEW, b"new", &key, reborrow(&mut publisher)),
                DbEvent::Expired(key) => {
                    event(notify::EXPIRED, b"expired", &key, reborrow(&mut publisher))
                }
                DbEvent::FieldsExpired { key, emptied } => {
                    event(notify::HASH, b"hexpired", &key, reborrow(&mut publisher));
                    if emptied {
                        event(notify::GENERIC, b"del", &key, reborrow(&mut publisher));
                    }
                }
            }
        }
    }

    /// Sets the `pubsub` class of client-output-buffer-limit.
    pub fn set_output_limits(&self, hard: u64, soft: u64, soft_seconds: u64) {
        self.limits.hard.store(hard, Ordering::Relaxed);
        self.limits.soft.store(soft, Ordering::Relaxed);
        self.limits
            .soft_seconds
            .store(soft_seconds, Ordering::Relaxed);
    }

    /// Subscribes the client to `name`; false when it already was (Redis
    /// still confirms; the count does not change).
    pub fn subscribe(
        &self,
        info: &Arc<ClientInfo>,
        subs: &mut Subscriptions,
        kind: Kind,
        name: &[u8],
    ) -> bool {
        if !subs.insert(kind, name) {
            return false;
        }
        match kind {
            Kind::Pattern => {
                let mut map = self.patterns.write();
                match map.get_mut(name) {
                    Some(list) => list.push(info.clone()),
                    None => {
                        map.insert(name.into(), vec![info.clone()]);
                        self.distinct_patterns.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            _ => self.table(kind).add(name, info),
        }
        self.subscriptions.fetch_add(1, Ordering::Release);
        subs.publish_counts(info);
        true
    }

    /// Unsubscribes the client from `name`; false when it was not
    /// subscribed.
    pub fn unsubscribe(
        &self,
        info: &ClientInfo,
        subs: &mut Subscriptions,
        kind: Kind,
        name: &[u8],
    ) -> bool {
        if !subs.remove(kind, name) {
            return false;
        }
        match kind {
            Kind::Pattern => {
                let mut map = self.patterns.write();
                remove_subscriber(&mut map, name, info.id, &self.distinct_patterns);
            }
            _ => self.table(kind).remove(name, info.id),
        }
        self.subscriptions.fetch_sub(1, Ordering::Release);
        subs.publish_counts(info);
        true
    }

    /// Leaves every subscription of one kind; returns the names left, in
    /// subscription order for patterns (Redis keeps them in a list).
    pub fn unsubscribe_all(
        &self,
        info: &ClientInfo,
        subs: &mut Subscriptions,
        kind: Kind,
    ) -> Vec<Box<[u8]>> {
        let names = subs.names_of(kind);
        for name in &names {
            self.unsubscribe(info, subs, kind, name);
        }
        names
    }

    /// Leaves everything (RESET, disconnect), without confirmations.
    pub fn leave(&self, info: &ClientInfo, subs: &mut Subscriptions) {
        for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
            self.unsubscribe_all(info, subs, kind);
        }
    }

    /// PUBLISH (or SPUBLISH with `Kind::Shard`): delivers `message` to the
    /// subscribers of `channel` and, for PUBLISH, of every matching
    /// pattern. Returns the number of deliveries (a client subscribed to
    /// the channel and to a matching pattern counts twice, as in Redis).
    pub fn publish(
        &self,
        kind: Kind,
        channel: &[u8],
        message: &[u8],
        mut publisher: Option<Publisher<'_>>,
    ) -> usize {
        if self.subscriptions.load(Ordering::Acquire) == 0 {
            return 0;
        }
        let table = self.table(kind);
        // Held while delivering, patterns included: one order per channel.
        let map = table.slot(channel).lock();
        let mut receivers = 0;
        if let Some(subs) = map.get(channel) {
            let word: &[u8] = if kind == Kind::Shard {
                b"smessage"
            } else {
                b"message"
            };
            let frame = encode(&[word, channel, message]);
            for c in subs {
                self.deliver(c, &frame, &mut publisher);
                receivers += 1;
            }
        }
        if kind == Kind::Channel && self.distinct_patterns.load(Ordering::Relaxed) > 0 {
            let patterns = self.patterns.read();
            for (pattern, subs) in patterns.iter() {
                if !glob_match(pattern, channel, false) {
                    continue;
                }
                let frame = encode(&[b"pmessage", pattern, channel, message]);
                for c in subs {
                    self.deliver(c, &frame, &mut publisher);
                    receivers += 1;
                }
            }
        }
        drop(map);
        receivers
    }

    /// Leaves `frame` (a push, or a RESP2 Pub/Sub message) in the
    /// client's mailbox, as a publish does: client-side caching's
    /// invalidation messages travel this way.
    pub fn push_to(&self, client: &ClientInfo, frame: &[u8]) {
        if client
            .mailbox
            .append(client, frame, &self.limits, &self.command_names)
        {
            self.memory.grow(client, frame.len());
        }
    }

    fn deliver(&self, client: &ClientInfo, frame: &[u8], publisher: &mut Option<Publisher<'_>>) {
        if let Some(p) = publisher.as_mut() {
            if p.info.id == client.id {
                // What reached the mailbox earlier goes first.
                client.mailbox.drain_into(p.out);
                let start = p.out.len();
                p.out.raw(&[if p.out.is_resp3() { b'>' } else { b'*' }]);
                p.out.raw(&frame[1..]);
                p.out.mark_push(start);
                return;
            }
        }
        if client
            .mailbox
            .append(client, frame, &self.limits, &self.command_names)
        {
            self.memory.grow(client, frame.len());
        }
    }

    /// The subscribed clients of user `user` that hold a subscription
    /// `allowed` refuses (Redis's ACLKillPubsubClientsIfNeeded looks at
    /// patterns as literals, channels as matched against the rules).
    pub fn subscribers_violating(
        &self,
        user: &[u8],
        allowed: &dyn Fn(&[u8], bool) -> bool,
    ) -> Vec<Arc<ClientInfo>> {
        if self.subscriptions.load(Ordering::Acquire) == 0 {
            return Vec::new();
        }
        let mut found: HashMap<u64, Arc<ClientInfo>> = HashMap::new();
        let mut visit = |map: &Map, is_pattern: bool| {
            for (name, subs) in map.iter() {
                for c in subs {
                    if found.contains_key(&c.id) || **c.user.lock() != *user {
                        continue;
                    }
                    if !allowed(name, is_pattern) {
                        found.insert(c.id, c.clone());
                    }
                }
            }
        };
        for table in [&self.channels, &self.shard_channels] {
            for slot in table.slots.iter() {
                visit(&slot.lock(), false);
            }
        }
        visit(&self.patterns.read(), true);
        found.into_values().collect()
    }
}

fn reborrow<'p>(p: &'p mut Option<Publisher<'_>>) -> Option<Publisher<'p>> {
    p.as_mut().map(|p| Publisher {
        info: p.info,
        out: &mut *p.out,
    })
}

/// A RESP2 array of bulk strings; RESP3 pushes differ only in the first
/// byte ('>' for '*').
fn encode(parts: &[&[u8]]) -> Vec<u8> {
    let len = parts.iter().map(|p| p.len() + 16).sum::<usize>() + 8;
    let mut out = Vec::with_capacity(len);
    let mut b = itoa::Buffer::new();
    out.push(b'*');
    out.extend_from_slice(b.format(parts.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for p in parts {
        out.push(b'$');
        out.extend_from_slice(b.format(p.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(p);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// What one client is subscribed to (Redis's c->pubsub_channels,
/// c->pubsub_patterns, c->pubsubshard_channels), kept in its state.
#[derive(Default)]
pub struct Subscriptions {
    channels: HashSet<Box<[u8]>>,
    shard_channels: HashSet<Box<[u8]>>,
    /// In subscription order, as Redis's list.
    patterns: Vec<Box<[u8]>>,
    pattern_set: HashSet<Box<[u8]>>,
}

impl Subscriptions {
    fn insert(&mut self, kind: Kind, name: &[u8]) -> bool {
        match kind {
            Kind::Channel => self.channels.insert(name.into()),
            Kind::Shard => self.shard_channels.insert(name.into()),
            Kind::Pattern => {
                if !self.pattern_set.insert(name.into()) {
                    return false;
                }
                self.patterns.push(name.into());
                true
            }
        }
    }

    fn remove(&mut self, kind: Kind, name: &[u8]) -> bool {
        match kind {
            Kind::Channel => self.channels.remove(name),
            Kind::Shard => self.shard_channels.remove(name),
            Kind::Pattern => {
                if !self.pattern_set.remove(name) {
                    return false;
                }
                if let Some(i) = self.patterns.iter().position(|p| &**p == name) {
                    self.patterns.remove(i);
                }
                true
            }
        }
    }

    /// The names of one kind (patterns in subscription order).
    pub fn names_of(&self, kind: Kind) -> Vec<Box<[u8]>> {
        match kind {
            Kind::Channel => self.channels.iter().cloned().collect(),
            Kind::Shard => self.shard_channels.iter().cloned().collect(),
            Kind::Pattern => self.patterns.clone(),
        }
    }

    /// Channels and patterns (the count SUBSCRIBE and PSUBSCRIBE confirm:
    /// Redis's clientSubscriptionsCount).
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    /// Shard channels (the count SSUBSCRIBE confirms).
    pub fn shard_count(&self) -> usize {
        self.shard_channels.len()
    }

    /// The confirmation count of a kind.
    pub fn count_for(&self, kind: Kind) -> usize {
        match kind {
            Kind::Shard => self.shard_count(),
            _ => self.count(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.count() + self.shard_count() == 0
    }

    /// Whether the client subscribes to `name` (a channel, or a pattern
    /// as written).
    pub fn contains(&self, kind: Kind, name: &[u8]) -> bool {
        match kind {
            Kind::Channel => self.channels.contains(name),
            Kind::Shard => self.shard_channels.contains(name),
            Kind::Pattern => self.pattern_set.contains(name),
        }
    }

    fn publish_counts(&self, info: &ClientInfo) {
        let c = &info.subscriptions;
        c.channels
            .store(self.channels.len() as u32, Ordering::Relaxed);
        c.patterns
            .store(self.patterns.len() as u32, Ordering::Relaxed);
        c.shard_channels
            .store(self.shard_channels.len() as u32, Ordering::Relaxed);
    }
}

/// A client's subscription counts as other connections see them (CLIENT
/// LIST's sub, psub and ssub, its P flag, CLIENT KILL TYPE pubsub).
#[derive(Default)]
pub struct SubscriptionCounts {
    pub channels: AtomicU32,
    pub patterns: AtomicU32,
    pub shard_channels: AtomicU32,
}

impl SubscriptionCounts {
    /// Subscribed to anything (Redis's CLIENT_PUBSUB flag).
    pub fn any(&self) -> bool {
        self.channels.load(Ordering::Relaxed)
            + self.patterns.load(Ordering::Relaxed)
            + self.shard_channels.load(Ordering::Relaxed)
            > 0
    }
}

/// Messages published to a client that its connection has not written
/// yet, encoded for its protocol.
#[derive(Default)]
pub struct Mailbox {
    /// Something is waiting: read without the lock by the connection.
    pending: AtomicBool,
    /// The bytes waiting, read without the lock (CLIENT LIST, the client's
    /// memory).
    len: AtomicUsize,
    inner: Mutex<MailboxInner>,
}

#[derive(Default)]
struct MailboxInner {
    bytes: Vec<u8>,
    /// When the mailbox first went over the soft limit (0: it is under).
    over_soft_since_ms: u64,
}

impl Mailbox {
    pub fn has_pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// Bytes waiting (CLIENT LIST's omem).
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends a message; false when it was not kept (the client is going,
    /// or is closed now for its output limit).
    fn append(
        &self,
        client: &ClientInfo,
        frame: &[u8],
        limits: &OutputLimits,
        names: &crate::client::CommandNames,
    ) -> bool {
        if client.is_killed() {
            return false;
        }
        let resp3 = client.resp.load(Ordering::Relaxed) == 3;
        let mut inner = self.inner.lock();
        let was_empty = inner.bytes.is_empty();
        inner.bytes.push(if resp3 { b'>' } else { b'*' });
        inner.bytes.extend_from_slice(&frame[1..]);
        if over_limit(&mut inner, limits) {
            inner.bytes = Vec::new();
            self.len.store(0, Ordering::Relaxed);
            drop(inner);
            crate::log::warning(&format!(
                "Client {} scheduled to be closed ASAP for overcoming of output buffer limits.",
                client.line(
                    crate::util::time::now_ms(),
                    names.get().map_or(&[], |n| n.as_slice())
                )
            ));
            client.kill();
            return false;
        }
        self.len.store(inner.bytes.len(), Ordering::Relaxed);
        if was_empty {
            self.pending.store(true, Ordering::Release);
        }
        drop(inner);
        if was_empty {
            client.wake.notify_one();
        }
        true
    }

    /// Moves the waiting messages to the end of `out`, marked as pushes
    /// (CLIENT REPLY OFF does not drop them). Returns whether there were any.
    pub fn drain_into(&self, out: &mut ReplyWriter) -> bool {
        if !self.has_pending() {
            return false;
        }
        let mut inner = self.inner.lock();
        self.pending.store(false, Ordering::Release);
        inner.over_soft_since_ms = 0;
        if inner.bytes.is_empty() {
            return false;
        }
        self.len.store(0, Ordering::Relaxed);
        let start = out.len();
        if out.is_empty() {
            std::mem::swap(&mut out.buf, &mut inner.bytes);
        } else {
            out.raw(&inner.bytes);
            inner.bytes.clear();
        }
        drop(inner);
        out.mark_push(start);
        true
    }

    /// Drops what is waiting (the client is going away).
    pub fn clear(&self) {
        let mut inner = self.inner.lock();
        inner.bytes = Vec::new();
        self.len.store(0, Ordering::Relaxed);
        self.pending.store(false, Ordering::Release);
    }
}

/// Redis's checkClientOutputBufferLimits for the pubsub class.
fn over_limit(inner: &mut MailboxInner, limits: &OutputLimits) -> bool {
    let used = inner.bytes.len() as u64;
    let hard = limits.hard.load(Ordering::Relaxed);
    if hard > 0 && used >= hard {
        return true;
    }
    let soft = limits.soft.load(Ordering::Relaxed);
    if soft > 0 && used >= soft {
        let now = crate::util::time::now_ms();
        if inner.over_soft_since_ms == 0 {
            inner.over_soft_since_ms = now;
            return false;
        }
        let secs = limits.soft_seconds.load(Ordering::Relaxed);
        return now.saturating_sub(inner.over_soft_since_ms) / 1000 > secs;
    }
    inner.over_soft_since_ms = 0;
    false
}

/// Keyspace notifications (Redis's notify.c): the classes of
/// `notify-keyspace-events` and their letters.
pub mod notify;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notify_flags_round_trip_as_redis_shows_them() {
        for (set, shown) in [
            ("gKE", "gKE"),
            ("$lshzxeKE", "$lshzxeKE"),
            ("KA", "AK"),
            ("EA", "AE"),
            ("", ""),
            ("Km", "Km"),
            ("nE", "nE"),
        ] {
            assert_eq!(notify::describe(notify::parse(set).unwrap()), shown);
        }
        assert_eq!(notify::parse("KEw"), None);
    }

    #[test]
    fn frames_are_resp_arrays_of_bulks() {
        assert_eq!(
            encode(&[b"message", b"ch", b"hi"]),
            b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n".to_vec()
        );
    }
}
