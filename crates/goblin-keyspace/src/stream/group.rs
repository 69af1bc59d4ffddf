//! Consumer groups (streamCG), their consumers (streamConsumer) and the
//! pending entries lists (streamNACK).
//!
//! Redis shares one NACK between the group's PEL and its owner's PEL; here
//! the group's PEL owns the NACK, which names its consumer, and each
//! consumer's PEL is the set of IDs it owns. Both are kept in step by the
//! methods below, which are the only writers.

use std::collections::{BTreeMap, BTreeSet};

use super::StreamId;
use crate::CompactBytes;

/// A delivered entry not yet acknowledged.
#[derive(Clone, Debug)]
pub struct Nack {
    /// Unix ms of the last delivery.
    pub delivery_time: i64,
    pub delivery_count: u64,
    /// The consumer it was last delivered to.
    pub consumer: CompactBytes,
}

#[derive(Clone, Debug, Default)]
pub struct Consumer {
    /// Unix ms of its last read or claim.
    pub seen_time: i64,
    /// The IDs of the group's PEL it owns.
    pub pel: BTreeSet<StreamId>,
}

#[derive(Clone, Debug)]
pub struct ConsumerGroup {
    /// The last ID delivered to the group's consumers.
    pub last_id: StreamId,
    /// The logical read counter; None when it cannot be known (Redis's
    /// SCG_INVALID_ENTRIES_READ).
    pub entries_read: Option<i64>,
    pub pel: BTreeMap<StreamId, Nack>,
    pub consumers: BTreeMap<CompactBytes, Consumer>,
}

impl ConsumerGroup {
    pub fn new(last_id: StreamId, entries_read: Option<i64>) -> ConsumerGroup {
        ConsumerGroup {
            last_id,
            entries_read,
            pel: BTreeMap::new(),
            consumers: BTreeMap::new(),
        }
    }

    /// Creates a consumer (streamCreateConsumer); false when it exists.
    pub fn create_consumer(&mut self, name: &[u8], now_ms: i64) -> bool {
        if self.consumers.contains_key(name) {
            return false;
        }
        self.consumers.insert(
            CompactBytes::from_slice(name),
            Consumer {
                seen_time: now_ms,
                pel: BTreeSet::new(),
            },
        );
        true
    }

    /// Looks a consumer up, refreshing its seen time unless `now_ms` is
    /// None (streamLookupConsumer with SLC_NO_REFRESH).
    pub fn lookup_consumer(&mut self, name: &[u8], now_ms: Option<i64>) -> Option<&mut Consumer> {
        let c = self.consumers.get_mut(name)?;
        if let Some(now) = now_ms {
            c.seen_time = now;
        }
        Some(c)
    }

    /// Deletes a consumer and its pending entries (streamDelConsumer);
    /// returns how many it had, None when there is no such consumer.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let c = self.consumers.remove(name)?;
        for id in &c.pel {
            self.pel.remove(id);
        }
        Some(c.pel.len())
    }

    /// Acknowledges an entry: removes it from both PELs. False when it was
    /// not pending.
    pub fn ack(&mut self, id: StreamId) -> bool {
        let Some(nack) = self.pel.remove(&id) else {
            return false;
        };
        if let Some(c) = self.consumers.get_mut(nack.consumer.as_slice()) {
            c.pel.remove(&id);
        }
        true
    }

    /// Records a delivery of `id` to `consumer` by XREADGROUP: a new NACK,
    /// or an existing one (XGROUP SETID rewound the group) reassigned to
    /// this consumer with its count reset to 1.
    pub fn deliver(&mut self, id: StreamId, consumer: &[u8], now_ms: i64) {
        if let Some(nack) = self.pel.get_mut(&id) {
            let old = std::mem::replace(&mut nack.consumer, CompactBytes::from_slice(consumer));
            nack.delivery_time = now_ms;
            nack.delivery_count = 1;
            if let Some(c) = self.consumers.get_mut(old.as_slice()) {
                c.pel.remove(&id);
            }
        } else {
            self.pel.insert(
                id,
                Nack {
                    delivery_time: now_ms,
                    delivery_count: 1,
                    consumer: CompactBytes::from_slice(consumer),
                },
            );
        }
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.insert(id);
        }
    }

    /// Gives the pending entry `id` to `consumer`, which exists (XCLAIM,
    /// XAUTOCLAIM); the caller sets its time and count. None when `id` is
    /// not pending.
    pub fn claim(&mut self, id: StreamId, consumer: &[u8]) -> Option<&mut Nack> {
        let nack = self.pel.get_mut(&id)?;
        if nack.consumer.as_slice() != consumer {
            if let Some(c) = self.consumers.get_mut(nack.consumer.as_slice()) {
                c.pel.remove(&id);
            }
            nack.consumer = CompactBytes::from_slice(consumer);
            if let Some(c) = self.consumers.get_mut(consumer) {
                c.pel.insert(id);
            }
        }
        Some(nack)
    }

    /// Makes `id` pending for `consumer`, which exists (XCLAIM ... FORCE):
    /// a new NACK, delivered once, now (streamCreateNACK).
    pub fn add_pending(&mut self, id: StreamId, consumer: &[u8], now_ms: i64) -> &mut Nack {
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.insert(id);
        }
        self.pel.entry(id).or_insert(Nack {
            delivery_time: now_ms,
            delivery_count: 1,
            consumer: CompactBytes::from_slice(consumer),
        })
    }

    /// Approximate bytes owned by the PELs and consumers.
    pub fn heap_size(&self) -> usize {
        let pel = self.pel.len() * (16 + std::mem::size_of::<Nack>() + 16);
        let consumers: usize = self
            .consumers
            .iter()
            .map(|(name, c)| {
                name.heap_size() + std::mem::size_of::<Consumer>() + 32 + c.pel.len() * 24
            })
            .sum();
        pel + consumers
    }
}
