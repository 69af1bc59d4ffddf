//! `Hash`: the value of a hash key, a map from fields to values.
//!
//! Two representations, switched exactly where Redis switches its
//! encodings, so that OBJECT ENCODING reports what Redis would:
//! - compact ("listpack"): fields and values as alternating entries of one
//!   [`Listpack`] buffer, in insertion order. A new hash starts here.
//! - table ("hashtable"): a [`Dict`] from [`SmallBytes`] field to
//!   [`ThinBytes`] value. An entry is 32 bytes (link, field handle with up
//!   to 15 bytes inline, value handle with up to 7 bytes inline), the size
//!   of Redis's dictEntry, and a string that does not fit inline costs no
//!   more than Redis's sds: a large hash never takes more memory than
//!   Redis's for the same data.
//!
//! A compact hash becomes a table when it would hold more than
//! `hash-max-listpack-entries` fields, or a field or value longer than
//! `hash-max-listpack-value` bytes (Redis's hashTypeTryConversion and
//! hashTypeSet), and never goes back.
//!
//! Commands reach the fields only through the methods here (get, set,
//! remove, iter, random, scan), never through the representation.
//!
//! Field expiry (HEXPIRE, HSETEX... of Redis 7.4/8.0) lives beside the
//! fields in [`FieldTtls`], allocated on the first field TTL: a hash without
//! TTLs pays one null pointer and nothing per field.
//! - compact: one deadline per pair, and the pairs ordered as Redis orders
//!   its "listpackex" form (by deadline, fields without one last, a field
//!   losing its TTL moving to the end), so that HGETALL lists them as Redis
//!   does. OBJECT ENCODING says "listpackex" from the first TTL on, as Redis
//!   never converts back.
//! - table: a map from field to deadline and the fields ordered by
//!   deadline, for the fields that have one.
//!
//! `remove` drops a field's TTL with it; `set` clears it (HSET's rule) and
//! `set_keep_ttl` keeps it (HINCRBY's). Expired fields stay until `reap`
//! removes them: the keyspace does that on every hash access
//! (`Db::lookup_hash`) and in the active expiry cycle, with the command's
//! clock.

use super::dict::{hash_key, Dict};
use super::listpack::Listpack;
use super::small_bytes::SmallBytes;
use super::thin_bytes::ThinBytes;
use std::collections::BTreeSet;

/// The conversion thresholds, read from the configuration once per command.
#[derive(Clone, Copy, Debug)]
pub struct HashLimits {
    /// hash-max-listpack-entries
    pub max_entries: usize,
    /// hash-max-listpack-value
    pub max_value: usize,
}

impl Default for HashLimits {
    /// Redis's defaults.
    fn default() -> Self {
        HashLimits {
            max_entries: 512,
            max_value: 64,
        }
    }
}

pub struct Hash {
    repr: Repr,
    /// Field deadlines; None until a field first gets a TTL.
    ttls: Option<Box<FieldTtls>>,
}

/// The deadlines (absolute Unix ms) of a hash's fields.
pub enum FieldTtls {
    /// Parallel to the compact form's pairs: one deadline per pair, 0 for
    /// none; non-zero deadlines ascending, before all the zeros.
    Compact(Vec<u64>),
    /// The fields of a table that have a deadline.
    Table {
        by_field: Dict<u64, SmallBytes>,
        by_time: BTreeSet<(u64, Box<[u8]>)>,
    },
}

/// The outcome of setting a field's deadline (HEXPIRE's per-field reply).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetTtl {
    NoField = -2,
    ConditionNotMet = 0,
    Set = 1,
    /// The deadline had passed: the field was deleted.
    Deleted = 2,
}

/// HEXPIRE's NX | XX | GT | LT.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TtlCondition {
    #[default]
    Always,
    Nx,
    Xx,
    Gt,
    Lt,
}

enum Repr {
    Compact(Listpack),
    Table(Dict<ThinBytes, SmallBytes>),
}

impl Default for Hash {
    fn default() -> Self {
        Hash::new()
    }
}

/// Offsets of a field entry and of its value entry in a compact hash.
fn find_compact(lp: &Listpack, field: &[u8]) -> Option<(usize, usize)> {
    find_compact_indexed(lp, field).map(|(_, f, v)| (f, v))
}

/// Like `find_compact`, with the pair's index.
fn find_compact_indexed(lp: &Listpack, field: &[u8]) -> Option<(usize, usize, usize)> {
    let mut off = 0;
    let mut idx = 0;
    while off < lp.bytes() {
        let (f, value_off) = lp.entry_at(off);
        if f == field {
            return Some((idx, off, value_off));
        }
        off = lp.entry_at(value_off).1;
        idx += 1;
    }
    None
}

/// Byte offset of pair `idx` (the buffer's end when idx == number of pairs).
fn compact_pair_offset(lp: &Listpack, idx: usize) -> usize {
    let mut off = 0;
    for _ in 0..idx * 2 {
        off = lp.entry_at(off).1;
    }
    off
}

/// Where a deadline goes among the compact form's ordered deadlines:
/// before the first that is later or equal, or that is none (Redis's
/// listpackExAddInternal).
fn compact_position(ttls: &[u64], at: u64) -> usize {
    ttls.iter()
        .position(|&t| t == 0 || t >= at)
        .unwrap_or(ttls.len())
}

/// Moves compact pair `idx` to the place its new deadline `at` (0 = none,
/// at the end) calls for.
fn compact_move(lp: &mut Listpack, ttls: &mut Vec<u64>, idx: usize, at: u64) {
    let off = compact_pair_offset(lp, idx);
    let (field, value_off) = lp.entry_at(off);
    let field = field.to_vec();
    let value = lp.entry_at(value_off).0.to_vec();
    lp.remove(off, 2);
    ttls.remove(idx);
    let pos = if at == 0 {
        ttls.len()
    } else {
        compact_position(ttls, at)
    };
    let at_off = compact_pair_offset(lp, pos);
    lp.insert(at_off, &[&field, &value]);
    ttls.insert(pos, at);
}

impl FieldTtls {
    fn table_remove(
        by_field: &mut Dict<u64, SmallBytes>,
        by_time: &mut BTreeSet<(u64, Box<[u8]>)>,
        field: &[u8],
    ) -> Option<u64> {
        let (_, at) = by_field.remove(hash_key(field), field)?;
        by_time.remove(&(at, Box::<[u8]>::from(field)));
        Some(at)
    }

    fn heap_size(&self) -> usize {
        match self {
            FieldTtls::Compact(v) => v.capacity() * 8,
            FieldTtls::Table { by_field, by_time } => {
                let entry = std::mem::size_of::<(usize, SmallBytes, u64)>();
                let bytes: usize = by_time.iter().map(|(_, f)| f.len() * 2).sum();
                by_field.buckets() * std::mem::size_of::<usize>()
                    + by_field.len() * entry
                    + by_time.len() * 48
                    + bytes
            }
        }
    }
}

impl Hash {
    /// An empty hash in the compact form.
    pub const fn new() -> Hash {
        Hash {
            repr: Repr::Compact(Listpack::new()),
            ttls: None,
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Compact(lp) => lp.len() / 2,
            Repr::Table(d) => d.len(),
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True in the compact form.
    pub fn is_compact(&self) -> bool {
        matches!(self.repr, Repr::Compact(_))
    }

    /// Redis's name for the representation (OBJECT ENCODING).
    pub fn encoding(&self) -> &'static str {
        match self.repr {
            Repr::Compact(_) if self.ttls.is_some() => "listpackex",
            Repr::Compact(_) => "listpack",
            Repr::Table(_) => "hashtable",
        }
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.repr {
            Repr::Compact(lp) => find_compact(lp, field).map(|(_, v)| lp.entry_at(v).0),
            Repr::Table(d) => d.get(hash_key(field), field).map(|v| v.as_slice()),
        }
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Redis's hashTypeTryConversion: before a write of `strings` (fields
    /// and values), a compact hash becomes a table when one of them is
    /// longer than the limit or the buffer would grow past its safety size.
    pub fn prepare_write(&mut self, strings: &[&[u8]], limits: &HashLimits) {
        let Repr::Compact(lp) = &self.repr else {
            return;
        };
        let mut sum = 0usize;
        for s in strings {
            if s.len() > limits.max_value {
                self.convert();
                return;
            }
            sum += s.len();
        }
        if !lp.safe_to_add(sum) {
            self.convert();
        }
    }

    /// Sets `field` to `value` (Redis's hashTypeSet); true when the field
    /// is new. A field's TTL is cleared, as HSET clears it. Converts to a
    /// table when the pair or the new size exceed the compact limits.
    pub fn set(&mut self, field: &[u8], value: &[u8], limits: &HashLimits) -> bool {
        self.set_with(field, value, limits, false)
    }

    /// Like `set`, but an existing field keeps its TTL (HINCRBY,
    /// HSETEX KEEPTTL).
    pub fn set_keep_ttl(&mut self, field: &[u8], value: &[u8], limits: &HashLimits) -> bool {
        self.set_with(field, value, limits, true)
    }

    fn set_with(
        &mut self,
        field: &[u8],
        value: &[u8],
        limits: &HashLimits,
        keep_ttl: bool,
    ) -> bool {
        if self.is_compact() && (field.len() > limits.max_value || value.len() > limits.max_value) {
            self.convert();
        }
        match &mut self.repr {
            Repr::Compact(lp) => {
                let inserted = match find_compact_indexed(lp, field) {
                    Some((idx, _, value_off)) => {
                        lp.replace(value_off, value);
                        if let Some(FieldTtls::Compact(ttls)) = self.ttls.as_deref_mut() {
                            if !keep_ttl && ttls[idx] != 0 {
                                compact_move(lp, ttls, idx, 0);
                            }
                        }
                        false
                    }
                    None => {
                        lp.push_pair(field, value);
                        if let Some(FieldTtls::Compact(ttls)) = self.ttls.as_deref_mut() {
                            ttls.push(0);
                        }
                        true
                    }
                };
                if lp.len() / 2 > limits.max_entries {
                    self.convert();
                }
                inserted
            }
            Repr::Table(d) => {
                let h = hash_key(field);
                match d.get_mut(h, field) {
                    Some(v) => {
                        *v = ThinBytes::from_slice(value);
                        if !keep_ttl {
                            if let Some(FieldTtls::Table { by_field, by_time }) =
                                self.ttls.as_deref_mut()
                            {
                                FieldTtls::table_remove(by_field, by_time, field);
                            }
                        }
                        false
                    }
                    None => {
                        d.insert_new(
                            h,
                            SmallBytes::from_slice(field),
                            ThinBytes::from_slice(value),
                        );
                        true
                    }
                }
            }
        }
    }

    /// Removes a field; true when it was there. The caller deletes the key
    /// when the hash becomes empty.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match &mut self.repr {
            Repr::Compact(lp) => match find_compact_indexed(lp, field) {
                Some((idx, off, _)) => {
                    lp.remove(off, 2);
                    if let Some(FieldTtls::Compact(ttls)) = self.ttls.as_deref_mut() {
                        ttls.remove(idx);
                    }
                    true
                }
                None => false,
            },
            Repr::Table(d) => {
                let removed = d.remove(hash_key(field), field).is_some();
                if removed {
                    if let Some(FieldTtls::Table { by_field, by_time }) = self.ttls.as_deref_mut() {
                        FieldTtls::table_remove(by_field, by_time, field);
                    }
                }
                removed
            }
        }
    }

    /// True when some field has (or had) a TTL: the hash must be known to
    /// the keyspace's index of hashes with field TTLs.
    pub fn has_field_ttls(&self) -> bool {
        match self.ttls.as_deref() {
            None => false,
            Some(FieldTtls::Compact(t)) => t.first().is_some_and(|&t| t != 0),
            Some(FieldTtls::Table { by_field, .. }) => !by_field.is_empty(),
        }
    }

    /// Prepares the hash for field TTLs (Redis's hashTypeSetExInit): a
    /// compact hash becomes "listpackex" from here on, even if no field
    /// ends up with a TTL.
    pub fn enable_field_ttls(&mut self) {
        if self.ttls.is_some() {
            return;
        }
        self.ttls = Some(Box::new(match &self.repr {
            Repr::Compact(lp) => FieldTtls::Compact(vec![0; lp.len() / 2]),
            Repr::Table(_) => FieldTtls::Table {
                by_field: Dict::new(),
                by_time: BTreeSet::new(),
            },
        }));
    }

    /// The deadline of the earliest field to expire.
    pub fn next_field_expiry(&self) -> Option<u64> {
        match self.ttls.as_deref()? {
            FieldTtls::Compact(t) => t.first().copied().filter(|&t| t != 0),
            FieldTtls::Table { by_time, .. } => by_time.first().map(|(t, _)| *t),
        }
    }

    /// True when some field's deadline is at or before `now_ms`.
    #[inline]
    pub fn has_expired_fields(&self, now_ms: u64) -> bool {
        self.ttls.is_some() && self.next_field_expiry().is_some_and(|t| t <= now_ms)
    }

    /// A field's deadline: None when the field is absent, Some(None) when
    /// it has no TTL.
    pub fn field_expiry(&self, field: &[u8]) -> Option<Option<u64>> {
        match &self.repr {
            Repr::Compact(lp) => {
                let (idx, _, _) = find_compact_indexed(lp, field)?;
                Some(match self.ttls.as_deref() {
                    Some(FieldTtls::Compact(t)) => Some(t[idx]).filter(|&t| t != 0),
                    _ => None,
                })
            }
            Repr::Table(d) => {
                let h = hash_key(field);
                d.get(h, field)?;
                Some(match self.ttls.as_deref() {
                    Some(FieldTtls::Table { by_field, .. }) => by_field.get(h, field).copied(),
                    _ => None,
                })
            }
        }
    }

    /// Sets a field's deadline under HEXPIRE's condition (Redis's
    /// hashTypeSetEx): NX needs no TTL, XX one, GT a later and LT an
    /// earlier deadline than the current one (a field without TTL counts as
    /// infinitely far, so LT holds and GT does not). A deadline at or
    /// before `now_ms` deletes the field. The caller has called
    /// `enable_field_ttls` and deletes the key if it became empty.
    pub fn set_field_expiry(
        &mut self,
        field: &[u8],
        at: u64,
        cond: TtlCondition,
        now_ms: u64,
    ) -> SetTtl {
        let Some(current) = self.field_expiry(field) else {
            return SetTtl::NoField;
        };
        let met = match (cond, current) {
            (TtlCondition::Always, _) => true,
            (TtlCondition::Nx, c) => c.is_none(),
            (TtlCondition::Xx, c) => c.is_some(),
            (TtlCondition::Gt, None) => false,
            (TtlCondition::Gt, Some(c)) => at > c,
            (TtlCondition::Lt, None) => true,
            (TtlCondition::Lt, Some(c)) => at < c,
        };
        if !met {
            return SetTtl::ConditionNotMet;
        }
        if at <= now_ms {
            self.remove(field);
            return SetTtl::Deleted;
        }
        self.enable_field_ttls();
        match (&mut self.repr, self.ttls.as_deref_mut()) {
            (Repr::Compact(lp), Some(FieldTtls::Compact(ttls))) => {
                let (idx, _, _) = find_compact_indexed(lp, field).expect("field present");
                compact_move(lp, ttls, idx, at);
            }
            (Repr::Table(_), Some(FieldTtls::Table { by_field, by_time })) => {
                FieldTtls::table_remove(by_field, by_time, field);
                by_field.insert_new(hash_key(field), SmallBytes::from_slice(field), at);
                by_time.insert((at, field.into()));
            }
            _ => unreachable!("field TTLs match the representation"),
        }
        SetTtl::Set
    }

    /// Removes a field's TTL (HPERSIST): true when it had one.
    pub fn persist_field(&mut self, field: &[u8]) -> bool {
        match (&mut self.repr, self.ttls.as_deref_mut()) {
            (Repr::Compact(lp), Some(FieldTtls::Compact(ttls))) => {
                match find_compact_indexed(lp, field) {
                    Some((idx, _, _)) if ttls[idx] != 0 => {
                        // Redis appends the persisted field at the end.
                        compact_move(lp, ttls, idx, 0);
                        true
                    }
                    _ => false,
                }
            }
            (Repr::Table(_), Some(FieldTtls::Table { by_field, by_time })) => {
                FieldTtls::table_remove(by_field, by_time, field).is_some()
            }
            _ => false,
        }
    }

    /// Deletes the fields whose deadline is at or before `now_ms`, at most
    /// `limit` of them, earliest first; returns how many.
    pub fn reap(&mut self, now_ms: u64, limit: usize) -> usize {
        let mut n = 0;
        while n < limit {
            match self.next_field_expiry() {
                Some(t) if t <= now_ms => {}
                _ => break,
            }
            match (&mut self.repr, self.ttls.as_deref_mut()) {
                (Repr::Compact(lp), Some(FieldTtls::Compact(ttls))) => {
                    lp.remove(0, 2);
                    ttls.remove(0);
                }
                (Repr::Table(d), Some(FieldTtls::Table { by_field, by_time })) => {
                    let (_, field) = by_time.pop_first().expect("a next expiry");
                    by_field.remove(hash_key(&field), &field);
                    d.remove(hash_key(&field), &field);
                }
                _ => unreachable!("field TTLs match the representation"),
            }
            n += 1;
        }
        n
    }

    /// `reap`, returning the deleted fields' names (for the append-only
    /// file, which logs them as HDEL).
    pub fn reap_fields(&mut self, now_ms: u64, limit: usize) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while out.len() < limit {
            match self.next_field_expiry() {
                Some(t) if t <= now_ms => {}
                _ => break,
            }
            let field = match (&mut self.repr, self.ttls.as_deref_mut()) {
                (Repr::Compact(lp), Some(FieldTtls::Compact(ttls))) => {
                    let f = lp.iter().next().expect("a field").to_vec();
                    lp.remove(0, 2);
                    ttls.remove(0);
                    f
                }
                (Repr::Table(d), Some(FieldTtls::Table { by_field, by_time })) => {
                    let (_, field) = by_time.pop_first().expect("a next expiry");
                    by_field.remove(hash_key(&field), &field);
                    d.remove(hash_key(&field), &field);
                    field.to_vec()
                }
                _ => unreachable!("field TTLs match the representation"),
            };
            out.push(field);
        }
        out
    }

    /// Field/value pairs: insertion order when compact, table order otherwise.
    pub fn iter(&self) -> Iter<'_> {
        match &self.repr {
            Repr::Compact(lp) => Iter::Compact(lp.iter()),
            Repr::Table(d) => Iter::Table(d.iter()),
        }
    }

    /// One random pair (Redis's hashTypeRandomElement).
    pub fn random(&self, rng: &mut fastrand::Rng) -> Option<(&[u8], &[u8])> {
        match &self.repr {
            Repr::Compact(lp) => {
                if lp.is_empty() {
                    return None;
                }
                let skip = rng.usize(..lp.len() / 2) * 2;
                let mut it = lp.iter().skip(skip);
                Some((it.next()?, it.next()?))
            }
            Repr::Table(d) => d
                .fair_random(rng)
                .map(|(k, v)| (k.as_slice(), v.as_slice())),
        }
    }

    /// A drawer of random pairs for commands that draw many: the compact
    /// form is indexed once instead of walked per draw.
    pub fn sampler(&self) -> Sampler<'_> {
        match &self.repr {
            Repr::Compact(_) => Sampler::Indexed(self.iter().collect()),
            Repr::Table(d) => Sampler::Table(d),
        }
    }

    /// One step of HSCAN from `cursor`, calling `f` for each pair visited;
    /// returns the next cursor (0 at the end). A compact hash is returned
    /// whole in one step, as Redis does.
    pub fn scan<'a>(&'a self, cursor: u64, mut f: impl FnMut(&'a [u8], &'a [u8])) -> u64 {
        match &self.repr {
            Repr::Compact(_) => {
                for (k, v) in self.iter() {
                    f(k, v);
                }
                0
            }
            Repr::Table(d) => d.scan(cursor, |k, v| f(k, v)),
        }
    }

    /// Approximate heap bytes, sampling at most `samples` table entries
    /// (0 = all), as Redis's objectComputeSize does.
    pub fn heap_size_sampled(&self, samples: usize) -> usize {
        let ttls = self
            .ttls
            .as_deref()
            .map_or(0, |t| std::mem::size_of::<FieldTtls>() + t.heap_size());
        ttls + match &self.repr {
            Repr::Compact(lp) => lp.heap_size(),
            Repr::Table(d) => {
                let entry = std::mem::size_of::<(usize, SmallBytes, ThinBytes)>();
                let base = d.buckets() * std::mem::size_of::<usize>() + d.len() * entry;
                let limit = if samples == 0 { usize::MAX } else { samples };
                let (mut seen, mut extra) = (0usize, 0usize);
                for (k, v) in d.iter().take(limit) {
                    seen += 1;
                    extra += k.heap_size() + v.heap_size();
                }
                if seen == 0 {
                    return base;
                }
                base + extra * d.len() / seen
            }
        }
    }

    /// Converts the compact form into a table (Redis's hashTypeConvert),
    /// sized for the current fields so that the conversion does not rehash.
    fn convert(&mut self) {
        let Repr::Compact(lp) = &self.repr else {
            return;
        };
        let mut d: Dict<ThinBytes, SmallBytes> = Dict::new();
        d.expand(lp.len() / 2);
        let mut it = lp.iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            d.insert_new(
                hash_key(k),
                SmallBytes::from_slice(k),
                ThinBytes::from_slice(v),
            );
        }
        if let Some(FieldTtls::Compact(ttls)) = self.ttls.as_deref() {
            let mut by_field: Dict<u64, SmallBytes> = Dict::new();
            let mut by_time = BTreeSet::new();
            let fields = lp.iter().step_by(2);
            for (field, &at) in fields.zip(ttls.iter()).filter(|(_, &t)| t != 0) {
                by_field.insert_new(hash_key(field), SmallBytes::from_slice(field), at);
                by_time.insert((at, field.into()));
            }
            self.ttls = Some(Box::new(FieldTtls::Table { by_field, by_time }));
        }
        self.repr = Repr::Table(d);
    }
}

impl Clone for Hash {
    /// A copy in the same representation (COPY keeps the encoding, as
    /// Redis's hashTypeDup does).
    fn clone(&self) -> Self {
        let ttls = self.ttls.as_deref().map(|t| {
            Box::new(match t {
                FieldTtls::Compact(v) => FieldTtls::Compact(v.clone()),
                FieldTtls::Table { by_field, by_time } => {
                    let mut copy: Dict<u64, SmallBytes> = Dict::new();
                    copy.expand(by_field.len());
                    for (k, v) in by_field.iter() {
                        copy.insert_new(hash_key(k), k.clone(), *v);
                    }
                    FieldTtls::Table {
                        by_field: copy,
                        by_time: by_time.clone(),
                    }
                }
            })
        });
        match &self.repr {
            Repr::Compact(lp) => Hash {
                repr: Repr::Compact(lp.clone()),
                ttls,
            },
            Repr::Table(d) => {
                let mut copy: Dict<ThinBytes, SmallBytes> = Dict::new();
                copy.expand(d.len());
                for (k, v) in d.iter() {
                    copy.insert_new(hash_key(k), k.clone(), v.clone());
                }
                Hash {
                    repr: Repr::Table(copy),
                    ttls,
                }
            }
        }
    }
}

impl std::fmt::Debug for Hash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(
                self.iter()
                    .map(|(k, v)| (String::from_utf8_lossy(k), String::from_utf8_lossy(v))),
            )
            .finish()
    }
}

pub enum Iter<'a> {
    Compact(super::listpack::Entries<'a>),
    Table(super::dict::Iter<'a, ThinBytes, SmallBytes>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], &'a [u8]);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Compact(it) => Some((it.next()?, it.next()?)),
            Iter::Table(it) => it.next().map(|(k, v)| (k.as_slice(), v.as_slice())),
        }
    }
}

pub enum Sampler<'a> {
    Indexed(Vec<(&'a [u8], &'a [u8])>),
    Table(&'a Dict<ThinBytes, SmallBytes>),
}

impl<'a> Sampler<'a> {
    /// A random pair of a non-empty hash.
    pub fn pick(&self, rng: &mut fastrand::Rng) -> (&'a [u8], &'a [u8]) {
        match self {
            Sampler::Indexed(pairs) => pairs[rng.usize(..pairs.len())],
            Sampler::Table(d) => {
                let (k, v) = d.fair_random(rng).expect("non-empty hash");
                (k.as_slice(), v.as_slice())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(entries: usize, value: usize) -> HashLimits {
        HashLimits {
            max_entries: entries,
            max_value: value,
        }
    }

    #[test]
    fn table_entry_is_as_small_as_redis_dict_entry() {
        // link + field + value: 32 bytes, like Redis's dictEntry (three
        // pointers, which jemalloc serves from its 32-byte class).
        assert_eq!(std::mem::size_of::<(usize, SmallBytes, ThinBytes)>(), 32);
    }

    #[test]
    fn compact_until_entry_limit_then_table() {
        let l = limits(4, 64);
        let mut h = Hash::new();
        for i in 0..4 {
            assert!(h.set(format!("f{i}").as_bytes(), b"v", &l));
        }
        assert_eq!(h.encoding(), "listpack");
        assert!(h.set(b"f4", b"v", &l));
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.len(), 5);
        for i in 0..5 {
            assert_eq!(h.get(format!("f{i}").as_bytes()), Some(&b"v"[..]));
        }
        // Removing fields never converts back.
        for i in 0..4 {
            assert!(h.remove(format!("f{i}").as_bytes()));
        }
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.len(), 1);
    }

    #[test]
    fn long_field_or_value_converts() {
        let l = limits(512, 8);
        let mut h = Hash::new();
        h.set(b"abcdefgh", b"12345678", &l);
        assert_eq!(h.encoding(), "listpack");
        h.set(b"x", b"123456789", &l);
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.get(b"abcdefgh"), Some(&b"12345678"[..]));
        assert_eq!(h.get(b"x"), Some(&b"123456789"[..]));

        let mut h = Hash::new();
        h.prepare_write(&[b"abcdefghi", b"1"], &l);
        assert_eq!(h.encoding(), "hashtable");
    }

    #[test]
    fn compact_update_and_remove_keep_pairs_aligned() {
        let l = HashLimits::default();
        let mut h = Hash::new();
        h.set(b"a", b"1", &l);
        h.set(b"b", b"2", &l);
        h.set(b"c", b"3", &l);
        assert!(!h.set(b"b", b"a much longer value than before", &l));
        assert!(h.remove(b"a"));
        assert!(!h.remove(b"a"));
        let pairs: Vec<(&[u8], &[u8])> = h.iter().collect();
        assert_eq!(
            pairs,
            vec![
                (&b"b"[..], &b"a much longer value than before"[..]),
                (&b"c"[..], &b"3"[..])
            ]
        );
        // A field equal to another's value is still looked up as a field.
        h.set(b"3", b"x", &l);
        assert_eq!(h.get(b"3"), Some(&b"x"[..]));
        assert_eq!(h.len(), 3);
    }

    #[test]
    fn conversion_preserves_every_pair() {
        let mut h = Hash::new();
        let l = limits(1000, 64);
        for i in 0..300 {
            h.set(
                format!("field:{i}").as_bytes(),
                format!("value:{i}").as_bytes(),
                &l,
            );
        }
        let before: std::collections::BTreeMap<Vec<u8>, Vec<u8>> =
            h.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
        h.convert();
        assert_eq!(h.encoding(), "hashtable");
        let after: std::collections::BTreeMap<Vec<u8>, Vec<u8>> =
            h.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
        assert_eq!(before, after);
        let copy = h.clone();
        assert_eq!(copy.encoding(), "hashtable");
        assert_eq!(copy.len(), 300);
    }

    #[test]
    fn scan_of_a_table_visits_every_field() {
        let l = limits(0, 64);
        let mut h = Hash::new();
        for i in 0..100 {
            h.set(format!("f{i}").as_bytes(), b"v", &l);
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        loop {
            cursor = h.scan(cursor, |k, _| {
                seen.insert(k.to_vec());
            });
            if cursor == 0 {
                break;
            }
        }
        assert_eq!(seen.len(), 100);
    }

    #[test]
    fn hash_without_ttls_pays_one_pointer() {
        // The field TTLs are one optional box: 8 bytes beside the 40 of the
        // representation, which jemalloc rounds to the same 48-byte size
        // class the hash had before. Nothing per field.
        assert_eq!(
            std::mem::size_of::<Hash>(),
            std::mem::size_of::<Repr>() + std::mem::size_of::<usize>()
        );
        assert!(std::mem::size_of::<Hash>() <= 48);
        let mut h = Hash::new();
        h.set(b"a", b"1", &HashLimits::default());
        assert!(h.ttls.is_none());
        assert_eq!(h.encoding(), "listpack");
    }

    #[test]
    fn reap_removes_due_fields_in_both_forms() {
        for entries in [512, 0] {
            let l = limits(entries, 64);
            let mut h = Hash::new();
            for i in 0..10 {
                h.set(format!("f{i}").as_bytes(), b"v", &l);
            }
            h.enable_field_ttls();
            for i in 0..5u64 {
                let r = h.set_field_expiry(
                    format!("f{i}").as_bytes(),
                    1000 + i,
                    TtlCondition::Always,
                    0,
                );
                assert_eq!(r, SetTtl::Set);
            }
            assert_eq!(h.next_field_expiry(), Some(1000));
            assert!(!h.has_expired_fields(999));
            assert!(h.has_expired_fields(1000));
            assert_eq!(h.reap(1002, usize::MAX), 3);
            assert_eq!(h.len(), 7);
            assert_eq!(h.field_expiry(b"f3"), Some(Some(1003)));
            assert_eq!(h.field_expiry(b"f9"), Some(None));
            assert_eq!(h.field_expiry(b"f0"), None);
            assert_eq!(h.reap(5000, 1), 1);
            assert_eq!(h.reap(5000, usize::MAX), 1);
            assert!(!h.has_field_ttls());
            assert_eq!(h.len(), 5);
            // A deadline at or before now deletes at once.
            assert_eq!(
                h.set_field_expiry(b"f9", 10, TtlCondition::Always, 10),
                SetTtl::Deleted
            );
            assert_eq!(
                h.set_field_expiry(b"zz", 10, TtlCondition::Always, 0),
                SetTtl::NoField
            );
            assert_eq!(h.len(), 4);
        }
    }

    #[test]
    fn conversion_and_copies_keep_deadlines() {
        let mut h = Hash::new();
        let l = limits(4, 64);
        for i in 0..4 {
            h.set(format!("f{i}").as_bytes(), b"v", &l);
        }
        h.enable_field_ttls();
        h.set_field_expiry(b"f2", 500, TtlCondition::Always, 0);
        h.set_field_expiry(b"f1", 400, TtlCondition::Always, 0);
        let order: Vec<&[u8]> = h.iter().map(|(k, _)| k).collect();
        assert_eq!(order, vec![&b"f1"[..], b"f2", b"f0", b"f3"]);
        h.set(b"f4", b"v", &l);
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.field_expiry(b"f1"), Some(Some(400)));
        assert_eq!(h.field_expiry(b"f2"), Some(Some(500)));
        assert_eq!(h.field_expiry(b"f4"), Some(None));
        let copy = h.clone();
        assert_eq!(copy.next_field_expiry(), Some(400));
        assert!(h.persist_field(b"f1"));
        assert!(!h.persist_field(b"f1"));
        assert_eq!(h.next_field_expiry(), Some(500));
        assert_eq!(copy.field_expiry(b"f1"), Some(Some(400)));
    }
}
