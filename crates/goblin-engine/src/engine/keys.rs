//! The shards a command must hold, from its key specs, and the ACL log
//! entry of a command refused by its user's rules.

use super::*;
use crate::command::keys::key_positions;
use crate::command::spec::CommandSpec;
use crate::command::table;

impl Engine {
    /// The shards a command must hold, from its keys.
    pub fn locks_for<'e>(
        &'e self,
        spec: &CommandSpec,
        argv: &[&[u8]],
        db_all: bool,
    ) -> ShardLocks<'e> {
        self.lock_keys(spec, argv, db_all, None)
            .expect("locking without a give-up condition always succeeds")
    }

    /// `locks_for`, giving up (None) when `give_up` turns true while it
    /// waits for a shard.
    pub fn lock_keys<'e>(
        &'e self,
        spec: &CommandSpec,
        argv: &[&[u8]],
        db_all: bool,
        give_up: Option<&dyn Fn() -> bool>,
    ) -> Option<ShardLocks<'e>> {
        let ks = &self.keyspace;
        let lock_set = |set: Option<Vec<usize>>| match (give_up, set) {
            (None, None) => Some(ks.lock_all()),
            (None, Some(v)) => Some(ks.lock_set(v)),
            (Some(g), set) => ks.lock_polling(set, g),
        };
        // A keyed EVAL script (see scripting::keyed) holds only the shards
        // of its KEYS, found below from EVAL's key spec.
        if db_all || spec.needs_all_shards(self, argv) {
            return lock_set(None);
        }
        // Fast path: a single key at a fixed position.
        if let Some(key) = crate::command::keys::sole_key(spec, argv) {
            return match key {
                Some(key) => {
                    let idx = ks.shard_of_key(key);
                    match give_up {
                        None => Some(ks.lock_one(idx)),
                        Some(g) => ks.lock_one_polling(idx, g),
                    }
                }
                None => Some(ShardLocks::None),
            };
        }
        if spec.keys.is_empty() && spec.keys_fn.is_none() {
            return Some(ShardLocks::None);
        }
        match key_positions(spec, argv) {
            Some(keys) => lock_set(Some(
                keys.iter()
                    .map(|(i, _)| ks.shard_of_key(argv[*i]))
                    .collect(),
            )),
            // Arguments that do not fit the key specs: hold everything; the
            // command will reject them itself.
            None => lock_set(None),
        }
    }

    /// Records a refused command in the ACL log (Redis's addACLLogEntry).
    pub fn acl_log_denied(
        &self,
        client: &ClientState,
        denied: crate::acl::Denied,
        context: crate::acl::LogContext,
        cmd_id: usize,
        argv: &[&[u8]],
    ) {
        use crate::acl::{Denied, LogReason};
        let (reason, object) = match denied {
            Denied::Command => (LogReason::Command, table().get(cmd_id).fullname.as_bytes()),
            Denied::Key(i) => (LogReason::Key, argv[i]),
            Denied::Channel(i) => (LogReason::Channel, argv[i]),
        };
        let username = client
            .user
            .as_ref()
            .map_or(b"default".to_vec(), |u| u.name().to_vec());
        self.acl_log(&client.info, reason, context, object, username);
    }
}
