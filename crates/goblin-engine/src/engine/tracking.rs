//! Client-side caching, the engine's side of `crate::tracking` (which
//! keeps the tracking and prefix tables): turning tracking on and off for
//! a client, remembering what it read, invalidating what a write changed,
//! and keeping the table within tracking-table-max-keys.

use super::*;
use crate::keyspace::CompactBytes;
use crate::tracking::*;
use std::sync::atomic::Ordering::Relaxed;

impl Engine {
    /// CLIENT TRACKING ON, once the options were checked (Redis's
    /// enableTracking).
    pub fn enable_tracking(&self, client: &mut ClientState, opts: &Options) {
        let t = self.tracking();
        let info = &client.info;
        let before = info.tracking.load(Relaxed);
        if before & bits::ON == 0 {
            t.clients.write().insert(info.id, info.clone());
            if t.count.fetch_add(1, Relaxed) == 0 {
                self.keyspace().env().want_events_for_tracking(true);
            }
        }
        let mut word = bits::ON | (opts.redirect & bits::REDIRECT);
        if opts.bcast {
            word |= bits::BCAST;
        }
        if opts.optin {
            word |= bits::OPTIN;
        }
        if opts.optout {
            word |= bits::OPTOUT;
        }
        if opts.noloop {
            word |= bits::NOLOOP;
        }
        info.tracking.store(word, Relaxed);
        let state = client.tracking.get_or_insert_with(Default::default);
        if opts.bcast {
            let empty = [Vec::new()];
            let wanted: &[Vec<u8>] = if opts.prefixes.is_empty() {
                &empty
            } else {
                &opts.prefixes
            };
            let mut table = t.prefixes.write();
            for p in wanted {
                let ids = table.entry(p.as_slice().into()).or_insert_with(|| {
                    t.prefix_count.fetch_add(1, Relaxed);
                    Vec::new()
                });
                if !ids.contains(&info.id) {
                    ids.push(info.id);
                    state.prefixes.push(p.clone());
                }
            }
            state.prefixes.sort();
        }
    }

    /// CLIENT TRACKING OFF, RESET and a disconnect (Redis's
    /// disableTracking): its prefixes and its entries in the table go.
    pub fn disable_tracking(&self, client: &mut ClientState) {
        let info = &client.info;
        let word = info.tracking.swap(0, Relaxed);
        let Some(state) = client.tracking.as_mut() else {
            return;
        };
        if word & bits::ON == 0 {
            return;
        }
        let t = self.tracking();
        if !state.prefixes.is_empty() {
            let mut table = t.prefixes.write();
            for p in state.prefixes.drain(..) {
                if let Some(ids) = table.get_mut(p.as_slice()) {
                    ids.retain(|x| *x != info.id);
                    if ids.is_empty() {
                        table.remove(p.as_slice());
                        t.prefix_count.fetch_sub(1, Relaxed);
                    }
                }
            }
        }
        if std::mem::take(&mut state.remembered) {
            t.sweep(info.id);
        }
        state.caching = false;
        t.clients.write().remove(&info.id);
        if t.count.fetch_sub(1, Relaxed) == 1 {
            self.keyspace().env().want_events_for_tracking(false);
        }
    }

    /// After a read-only command of a tracking client in default mode:
    /// remembers the keys it read (Redis's trackingRememberKeys), while
    /// the command still holds their shards.
    pub(crate) fn remember_keys(&self, client: &mut ClientState, keys: &[&[u8]]) {
        let Some(state) = client.tracking.as_mut() else {
            return;
        };
        let word = client.info.tracking.load(Relaxed);
        if !may_cache(word, state.caching) {
            return;
        }
        self.remember_for(client.info.id, keys);
        state.remembered = true;
    }

    /// Remembers `keys` for client `id`.
    pub(crate) fn remember_for(&self, id: u64, keys: &[&[u8]]) {
        let t = self.tracking();
        for key in keys {
            let hash = crate::keyspace::hash_key(key);
            let shard = self.keyspace().shard_of(hash);
            t.remember(shard, hash, key, id);
        }
    }

    /// `key` changed (Redis's trackingInvalidateKey): the clients that
    /// read it are told, and it is collected for the BCAST clients.
    /// `by_writer`: the change is the writer's own (not an expiry).
    pub(crate) fn invalidate_key(&self, key: &[u8], pending: &mut Pending, by_writer: bool) {
        let t = self.tracking();
        if t.has_prefixes() {
            pending
                .bcast
                .push((CompactBytes::from_slice(key), by_writer));
        }
        let hash = crate::keyspace::hash_key(key);
        let shard = self.keyspace().shard_of(hash);
        let Some(readers) = t.take(shard, hash, key) else {
            return;
        };
        self.send_to_readers(&readers, key, pending);
    }

    fn send_to_readers(&self, readers: &Readers, key: &[u8], pending: &mut Pending) {
        let t = self.tracking();
        for &id in readers.ids() {
            let Some(target) = t.target(id) else {
                continue;
            };
            let word = target.tracking.load(Relaxed);
            // A client that switched to BCAST since it read the key is not
            // told of it.
            if word & bits::ON == 0 || word & bits::BCAST != 0 {
                continue;
            }
            if word & bits::NOLOOP != 0 && id == pending.id {
                continue;
            }
            self.send_tracking(&target, word, Payload::Key(key), pending);
        }
    }

    /// Sends the BCAST messages for the keys `pending` collected (Redis's
    /// trackingBroadcastInvalidationMessages, for one writer).
    pub(crate) fn flush_bcast(&self, pending: &mut Pending) {
        if pending.bcast.is_empty() {
            return;
        }
        let mut keys = std::mem::take(&mut pending.bcast);
        // Sorted as Redis's radix tree keeps them; a key changed twice
        // counts as its last change (`sort_by` is stable).
        keys.sort_by(|a, b| a.0.as_slice().cmp(b.0.as_slice()));
        let mut dedup: Vec<(CompactBytes, bool)> = Vec::with_capacity(keys.len());
        for (k, by) in keys {
            match dedup.last_mut() {
                Some(last) if last.0.as_slice() == k.as_slice() => last.1 = by,
                _ => dedup.push((k, by)),
            }
        }
        let t = self.tracking();
        let prefixes = t.prefixes.read();
        for (prefix, ids) in prefixes.iter() {
            let matching: Vec<&(CompactBytes, bool)> = dedup
                .iter()
                .filter(|(k, _)| k.as_slice().starts_with(prefix))
                .collect();
            if matching.is_empty() {
                continue;
            }
            let all = encode_keys(matching.iter().map(|(k, _)| k.as_slice()));
            for &id in ids {
                let Some(target) = t.target(id) else {
                    continue;
                };
                let word = target.tracking.load(Relaxed);
                if word & bits::NOLOOP != 0 && id == pending.id {
                    let others: Vec<&[u8]> = matching
                        .iter()
                        .filter(|(_, by)| !by)
                        .map(|(k, _)| k.as_slice())
                        .collect();
                    if others.is_empty() {
                        continue;
                    }
                    let adhoc = encode_keys(others.iter().copied());
                    self.send_tracking(&target, word, Payload::Encoded(&adhoc), pending);
                } else {
                    self.send_tracking(&target, word, Payload::Encoded(&all), pending);
                }
            }
        }
    }

    /// FLUSHDB, FLUSHALL (and SWAPDB): every tracking client is told that
    /// every key changed, and the table empties (Redis's
    /// trackingInvalidateKeysOnFlush).
    pub(crate) fn invalidate_all(&self, pending: &mut Pending) {
        let t = self.tracking();
        if !t.active() {
            return;
        }
        let targets: Vec<Arc<ClientInfo>> = t.clients.read().values().cloned().collect();
        for target in targets {
            let word = target.tracking.load(Relaxed);
            if word & bits::ON != 0 {
                self.send_tracking(&target, word, Payload::Null, pending);
            }
        }
        t.clear();
    }

    /// The data was replaced outside any client's command (a replica's
    /// full synchronization, DEBUG RELOAD): every tracking client is told
    /// that every key changed, as Redis's emptyData does.
    pub fn tracking_data_replaced(&self) {
        self.invalidate_all(&mut Pending::default());
    }

    /// Redis's sendTrackingMessage: to `target`'s redirection client, or
    /// to `target` itself in RESP3; a redirection whose client is gone
    /// marks `target` and tells it (RESP3).
    fn send_tracking(
        &self,
        target: &ClientInfo,
        word: u64,
        payload: Payload<'_>,
        pending: &mut Pending,
    ) {
        let redirect = word & bits::REDIRECT;
        let resp3 = |c: &ClientInfo| c.resp.load(Relaxed) == 3;
        let dest: Arc<ClientInfo>;
        let (to, redirected): (&ClientInfo, bool) = if redirect != 0 {
            match self.clients().get(redirect) {
                Some(c) if !c.is_gone() => {
                    dest = c;
                    (&dest, true)
                }
                _ => {
                    target.tracking.fetch_or(bits::BROKEN_REDIR, Relaxed);
                    if resp3(target) {
                        let mut frame = b">2\r\n$21\r\ntracking-redir-broken\r\n:".to_vec();
                        frame.extend_from_slice(itoa::Buffer::new().format(redirect).as_bytes());
                        frame.extend_from_slice(b"\r\n");
                        self.deliver_tracking(target, &frame, pending);
                    }
                    return;
                }
            }
        } else {
            (target, false)
        };
        let mut frame = if resp3(to) {
            b">2\r\n$10\r\ninvalidate\r\n".to_vec()
        } else if redirected && to.subscriptions.any() {
            b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n".to_vec()
        } else {
            // A RESP2 client cannot receive pushes on its own connection.
            return;
        };
        match payload {
            Payload::Key(key) => frame.extend_from_slice(&encode_keys(std::iter::once(key))),
            Payload::Encoded(bytes) => frame.extend_from_slice(bytes),
            // The null of the tracking client's own protocol, as Redis.
            Payload::Null if resp3(target) => frame.extend_from_slice(b"_\r\n"),
            Payload::Null => frame.extend_from_slice(b"$-1\r\n"),
        }
        self.deliver_tracking(to, &frame, pending);
    }

    /// A message for the writer itself waits for its reply; any other
    /// goes to the client's mailbox.
    fn deliver_tracking(&self, to: &ClientInfo, frame: &[u8], pending: &mut Pending) {
        if to.id == pending.id {
            pending.own.extend_from_slice(frame);
        } else {
            self.pubsub().push_to(to, frame);
        }
    }

    /// Keeps the tracking table within tracking-table-max-keys (Redis's
    /// trackingLimitUsedSlots): random keys are dropped from it, their
    /// readers told as if the keys changed. Each call that cannot get
    /// under the limit tries harder the next time.
    pub fn limit_tracking_table(&self) {
        let t = self.tracking();
        if !t.over_limit() {
            t.effort_rounds.store(0, Relaxed);
            return;
        }
        let mut effort = 100 * (t.effort_rounds.load(Relaxed) as usize + 1);
        let mut rng = fastrand::Rng::new();
        let n = t.tables.len();
        let mut pending = Pending::default();
        while effort > 0 {
            effort -= 1;
            let start = rng.usize(..n);
            let mut taken = None;
            for i in 0..n {
                let idx = (start + i) % n;
                let mut table = t.tables[idx].lock();
                let Some((key, _)) = table.random(&mut rng) else {
                    continue;
                };
                let key = key.clone();
                let hash = crate::keyspace::hash_key(&key);
                if let Some((_, readers)) = table.remove(hash, &key) {
                    drop(table);
                    t.forget_entry(key.len(), readers.len());
                    taken = Some((key, readers));
                }
                break;
            }
            let Some((key, readers)) = taken else {
                break;
            };
            self.send_to_readers(&readers, &key, &mut pending);
            if !t.over_limit() {
                t.effort_rounds.store(0, Relaxed);
                return;
            }
        }
        t.effort_rounds.fetch_add(1, Relaxed);
    }
}

/// Invalidations for what expired outside any command (the active expiry
/// cycle): sent at once, BCAST included.
impl Engine {
    pub(crate) fn expired_outside_commands(&self, events: &[crate::keyspace::db::DbEvent]) {
        let engine = self;
        let mut keys = Vec::new();
        expired_keys(events, &mut keys);
        if keys.is_empty() {
            return;
        }
        let mut pending = Pending::default();
        for key in &keys {
            engine.invalidate_key(key, &mut pending, false);
        }
        engine.flush_bcast(&mut pending);
    }
}
