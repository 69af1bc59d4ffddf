//! Where a command's keys and channels are among its arguments: Redis 7's
//! key specs and the channel arguments ACL rules check. Plain data and
//! pure functions of the arguments.

/// Custom key extraction, for commands whose keys the key specs cannot
/// describe (SORT ... STORE, MIGRATE): (argument index, key spec flags) of
/// each key, as Redis's getkeys procs fill their keyReferences.
pub type KeysFn = fn(&[&[u8]]) -> Vec<(usize, u32)>;
/// The key flags of a key spec marked VARIABLE_FLAGS, from the arguments
/// (Redis's setGetKeys, bitfieldGetKeys): what COMMAND GETKEYSANDFLAGS
/// reports and ACL key permissions check.
pub type KeyFlagsFn = fn(&[&[u8]]) -> u32;

/// Which arguments of a command are Pub/Sub channels, for the ACL channel
/// rules (Redis's commands_with_channels table in db.c).
#[derive(Clone, Copy, Debug)]
pub struct ChannelSpec {
    pub flags: u32,
    /// The first channel argument.
    pub first: usize,
    /// The last one, -1 for the last argument.
    pub last: i32,
}

impl ChannelSpec {
    /// The channel arguments of a call with `argc` arguments.
    pub fn positions(&self, argc: usize) -> std::ops::Range<usize> {
        let end = if self.last < 0 {
            argc
        } else {
            (self.last as usize + 1).min(argc)
        };
        self.first.min(end)..end
    }
}

/// Where the search for a spec's keys begins.
#[derive(Clone, Copy, Debug)]
pub enum BeginSearch {
    /// At this argument index (0 = command name).
    Index(i32),
    /// After the first (or, with a negative start, last) occurrence of a keyword.
    Keyword {
        keyword: &'static str,
        start_from: i32,
    },
    /// Nowhere a spec can say (SORT's BY/GET patterns and its STORE,
    /// which may come anywhere): the command finds these keys itself
    /// (`keys_fn`); COMMAND INFO shows the spec as "unknown".
    Unknown,
}

/// How the keys are found from the beginning.
#[derive(Clone, Copy, Debug)]
pub enum FindKeys {
    /// `lastkey` relative to the beginning (-1 = last argument), every `step`;
    /// with `limit` > 1 the range stops at 1/limit of the remaining arguments.
    Range { lastkey: i32, step: i32, limit: i32 },
    /// The argument at `keynum_idx` (relative) gives the number of keys,
    /// which start at `first` (relative), every `step`.
    Keynum {
        keynum_idx: i32,
        first: i32,
        step: i32,
    },
    /// With `BeginSearch::Unknown`.
    Unknown,
}

#[derive(Clone, Copy, Debug)]
pub struct KeySpec {
    pub flags: u32,
    pub begin: BeginSearch,
    pub find: FindKeys,
}

impl KeySpec {
    /// The common case: one key at a fixed position.
    pub const fn at(pos: i32, flags: u32) -> KeySpec {
        KeySpec {
            flags,
            begin: BeginSearch::Index(pos),
            find: FindKeys::Range {
                lastkey: 0,
                step: 1,
                limit: 0,
            },
        }
    }

    /// Keys from `pos` to `lastkey` (relative; -1 = to the end) every `step`.
    pub const fn range(pos: i32, lastkey: i32, step: i32, flags: u32) -> KeySpec {
        KeySpec {
            flags,
            begin: BeginSearch::Index(pos),
            find: FindKeys::Range {
                lastkey,
                step,
                limit: 0,
            },
        }
    }

    /// Keys no spec can locate (see `BeginSearch::Unknown`).
    pub const fn unknown(flags: u32) -> KeySpec {
        KeySpec {
            flags,
            begin: BeginSearch::Unknown,
            find: FindKeys::Unknown,
        }
    }

    /// A count at `pos` followed by that many keys (EVAL, ZUNIONSTORE...).
    pub const fn keynum(pos: i32, flags: u32) -> KeySpec {
        KeySpec {
            flags,
            begin: BeginSearch::Index(pos),
            find: FindKeys::Keynum {
                keynum_idx: 0,
                first: 1,
                step: 1,
            },
        }
    }
}

/// Where a command's keys are: its key specs and its own searches. The
/// functions of `command::keys` find keys through it, so that what only
/// needs a command's keys (ACL key rules) need not know the rest of it.
pub trait KeySource {
    fn key_specs(&self) -> &'static [KeySpec];
    /// Custom key extraction (see [`KeysFn`]).
    fn keys_fn(&self) -> Option<KeysFn>;
    /// The flags of key specs marked VARIABLE_FLAGS (see [`KeyFlagsFn`]).
    fn key_flags_fn(&self) -> Option<KeyFlagsFn>;
}

/// A command's [`KeySource`] as plain data.
#[derive(Clone, Copy)]
pub struct Keys {
    pub specs: &'static [KeySpec],
    pub find: Option<KeysFn>,
    pub flags_of: Option<KeyFlagsFn>,
}

impl Keys {
    /// Whether the command has keys at all.
    pub fn any(&self) -> bool {
        !self.specs.is_empty() || self.find.is_some()
    }
}

impl KeySource for Keys {
    fn key_specs(&self) -> &'static [KeySpec] {
        self.specs
    }
    fn keys_fn(&self) -> Option<KeysFn> {
        self.find
    }
    fn key_flags_fn(&self) -> Option<KeyFlagsFn> {
        self.flags_of
    }
}
