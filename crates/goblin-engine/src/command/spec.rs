//! `CommandSpec`: the declarative description of one command.
//!
//! Each command family file (`commands/strings.rs`, ...) exports a list of
//! specs. The dispatcher (arity, flags, key positions for locking), COMMAND
//! INFO / DOCS / LIST / GETKEYS, ACL categories and cluster-style key
//! routing all read these specs and nothing else.

use super::Ctx;
use crate::Error;

pub use super::flags::{chflag, flag, kflag};
pub use super::keyspec::{BeginSearch, ChannelSpec, FindKeys, KeyFlagsFn, KeySpec, KeysFn};
use super::keyspec::{KeySource, Keys};

pub type CmdResult = Result<(), Error>;
pub type Handler = fn(&mut Ctx<'_, '_>, &[&[u8]]) -> CmdResult;
/// Custom locking, for commands whose shards depend on client state rather
/// than arguments (EXEC locks what its queued commands and WATCHed keys need).
pub type LocksFn = for<'e> fn(
    &'e crate::engine::Engine,
    &crate::client::ClientState,
    &[&[u8]],
) -> crate::keyspace::ShardLocks<'e>;

/// The flags a call really has, when they depend on more than the command
/// (Redis's getCommandFlags): a script's come from the flags it declares,
/// EXEC's include those of the commands it queued. Given the command's
/// own flags; admission (CLIENT PAUSE, OOM, min-replicas) reads the result.
pub type FlagsFn = fn(&crate::engine::Engine, &crate::client::ClientState, &[&[u8]], u32) -> u32;
/// For a command flagged ALL_SHARDS: whether this call holds only the
/// shards of its keys instead (an EVAL of a keyed script, see
/// `scripting::keyed`).
pub type KeyedFn = fn(&crate::engine::Engine, &[&[u8]]) -> bool;

/// The command groups of COMMAND DOCS (and of Redis's documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    Generic,
    String,
    List,
    Set,
    SortedSet,
    Hash,
    Bitmap,
    Geo,
    HyperLogLog,
    Stream,
    Connection,
    Server,
    Scripting,
    Transactions,
    PubSub,
    Cluster,
    Goblin,
    /// Commands of modules Goblin builds in (redis-cell's CL.THROTTLE):
    /// Redis reports a module command's group as "module".
    Module,
}

impl Group {
    pub fn name(self) -> &'static str {
        match self {
            Group::Generic => "generic",
            Group::String => "string",
            Group::List => "list",
            Group::Set => "set",
            Group::SortedSet => "sorted-set",
            Group::Hash => "hash",
            Group::Bitmap => "bitmap",
            Group::Geo => "geo",
            Group::HyperLogLog => "hyperloglog",
            Group::Stream => "stream",
            Group::Connection => "connection",
            Group::Server => "server",
            Group::Scripting => "scripting",
            Group::Transactions => "transactions",
            Group::PubSub => "pubsub",
            Group::Cluster => "cluster",
            Group::Goblin => "goblin",
            Group::Module => "module",
        }
    }

    /// The ACL category every command of the group belongs to.
    pub fn acl_category(self) -> Option<&'static str> {
        match self {
            Group::Generic => Some("keyspace"),
            Group::String => Some("string"),
            Group::List => Some("list"),
            Group::Set => Some("set"),
            Group::SortedSet => Some("sortedset"),
            Group::Hash => Some("hash"),
            Group::Bitmap => Some("bitmap"),
            Group::Geo => Some("geo"),
            Group::HyperLogLog => Some("hyperloglog"),
            Group::Stream => Some("stream"),
            Group::Connection => Some("connection"),
            Group::Scripting => Some("scripting"),
            Group::Transactions => Some("transaction"),
            // @pubsub comes from the PUBSUB flag (PUBSUB HELP has none).
            Group::Server | Group::PubSub | Group::Cluster | Group::Goblin | Group::Module => None,
        }
    }
}

pub struct CommandSpec {
    /// Lower-case name ("get", "goblin.decrpos"; for a subcommand, "get" of CONFIG).
    pub name: &'static str,
    /// Redis arity: exact count if positive, minimum count if negative
    /// (the command name counts).
    pub arity: i32,
    pub flags: u32,
    /// Extra ACL categories beyond those the flags and group imply.
    pub acl: &'static [&'static str],
    /// Whether the group implies its category (@keyspace for a generic
    /// command, @list for a list command...); false where Redis gives a
    /// command other categories than its group's (SORT: @set, @sortedset,
    /// @list, no @keyspace).
    pub group_acl: bool,
    pub keys: &'static [KeySpec],
    /// Notes of key specs, by index in `keys` (COMMAND INFO's "notes").
    pub key_spec_notes: &'static [(usize, &'static str)],
    /// The Pub/Sub channels among the arguments, for ACL channel rules.
    pub channels: Option<ChannelSpec>,
    pub keys_fn: Option<KeysFn>,
    /// For key specs marked VARIABLE_FLAGS: their flags for these arguments.
    pub key_flags_fn: Option<KeyFlagsFn>,
    pub locks_fn: Option<LocksFn>,
    pub flags_fn: Option<FlagsFn>,
    pub keyed_fn: Option<KeyedFn>,
    pub group: Group,
    pub since: &'static str,
    pub summary: &'static str,
    /// "" for none (Redis leaves it out of COMMAND DOCS then).
    pub complexity: &'static str,
    /// Documentation flags of COMMAND DOCS ("syscmd", "deprecated").
    pub doc_flags: &'static [&'static str],
    /// Argument synopsis in the mini-language of `command::syntax`
    /// (COMMAND DOCS arguments are generated from it).
    pub syntax: &'static str,
    /// Command tips (COMMAND INFO / DOCS), e.g. "nondeterministic_output".
    pub tips: &'static [&'static str],
    /// COMMAND DOCS's history: (version, change) pairs.
    pub history: &'static [(&'static str, &'static str)],
    /// The version that deprecated the command ("" when it is not).
    pub deprecated_since: &'static str,
    /// What replaces a deprecated command ("" when nothing does).
    pub replaced_by: &'static str,
    pub handler: Handler,
    pub subcommands: &'static [CommandSpec],
    /// A protected command (Redis's CMD_PROTECTED: DEBUG, MODULE LOAD...):
    /// the parameter that allows it (`yes`, or `local` for a local client),
    /// checked at admission.
    pub protected_by: Option<crate::config::Param>,
}

fn no_handler(_: &mut Ctx<'_, '_>, _: &[&[u8]]) -> CmdResult {
    Err(Error::err("command has no handler"))
}

impl CommandSpec {
    /// Field defaults, for `..CommandSpec::DEFAULT` in the family tables.
    pub const DEFAULT: CommandSpec = CommandSpec {
        name: "",
        arity: 1,
        flags: 0,
        acl: &[],
        group_acl: true,
        keys: &[],
        key_spec_notes: &[],
        channels: None,
        keys_fn: None,
        key_flags_fn: None,
        locks_fn: None,
        flags_fn: None,
        keyed_fn: None,
        group: Group::Generic,
        since: "1.0.0",
        summary: "",
        complexity: "O(1)",
        doc_flags: &[],
        syntax: "",
        tips: &[],
        history: &[],
        deprecated_since: "",
        replaced_by: "",
        handler: no_handler,
        subcommands: &[],
        protected_by: None,
    };

    pub fn has(&self, f: u32) -> bool {
        self.flags & f != 0
    }

    pub fn is_write(&self) -> bool {
        self.has(flag::WRITE)
    }

    /// The flags of a call with `argv` by `client` (see [`FlagsFn`]).
    pub fn call_flags(
        &self,
        engine: &crate::engine::Engine,
        client: &crate::client::ClientState,
        argv: &[&[u8]],
    ) -> u32 {
        match self.flags_fn {
            Some(f) => f(engine, client, argv, self.flags),
            None => self.flags,
        }
    }

    /// Whether a call with `argv` needs every shard (see [`KeyedFn`]).
    pub fn needs_all_shards(&self, engine: &crate::engine::Engine, argv: &[&[u8]]) -> bool {
        self.has(flag::ALL_SHARDS) && !self.keyed_fn.is_some_and(|f| f(engine, argv))
    }

    /// Arity check, Redis's rule.
    pub fn arity_ok(&self, argc: usize) -> bool {
        let a = self.arity;
        (a > 0 && argc as i32 == a) || (a < 0 && argc as i32 >= -a)
    }

    /// ACL categories: those implied by flags and group (Redis's
    /// setImplicitACLCategories) plus the explicit ones, in Redis's order
    /// of category bits (COMMAND INFO lists them so).
    pub fn acl_categories(&self) -> Vec<&'static str> {
        const ORDER: &[&str] = &[
            "keyspace",
            "read",
            "write",
            "set",
            "sortedset",
            "list",
            "hash",
            "string",
            "bitmap",
            "hyperloglog",
            "geo",
            "stream",
            "pubsub",
            "admin",
            "fast",
            "slow",
            "blocking",
            "dangerous",
            "connection",
            "transaction",
            "scripting",
        ];
        let mut cats: Vec<&'static str> = Vec::new();
        let mut add = |c: &'static str| {
            if !cats.contains(&c) {
                cats.push(c);
            }
        };
        if self.has(flag::WRITE) {
            add("write");
        }
        if self.has(flag::READONLY) && self.group != Group::Scripting {
            add("read");
        }
        if self.has(flag::ADMIN) {
            add("admin");
            add("dangerous");
        }
        if self.has(flag::PUBSUB) {
            add("pubsub");
        }
        if self.has(flag::FAST) {
            add("fast");
        }
        if self.has(flag::BLOCKING) {
            add("blocking");
        }
        if !self.has(flag::FAST) {
            add("slow");
        }
        // A container (XINFO, OBJECT, CLIENT...) is in no category of its
        // group: its subcommands are (Redis's container commands declare
        // no ACL categories).
        if let Some(c) = self
            .group
            .acl_category()
            .filter(|_| self.subcommands.is_empty() && self.group_acl)
        {
            add(c);
        }
        for c in self.acl {
            add(c);
        }
        cats.sort_by_key(|c| ORDER.iter().position(|o| o == c).unwrap_or(ORDER.len()));
        cats
    }

    /// Redis's legacy (first, last, step) triple and the "movablekeys"
    /// flag, derived from the key specs as populateCommandLegacyRangeSpec does.
    pub fn legacy_range(&self) -> ((i32, i32, i32), bool) {
        let mut movable = self.keys_fn.is_some();
        let specs = self.keys;
        if specs.is_empty() {
            return ((0, 0, 0), movable);
        }
        let abs_last = |pos: i32, lastkey: i32| if lastkey < 0 { lastkey } else { pos + lastkey };
        if let [KeySpec {
            begin: BeginSearch::Index(pos),
            find: FindKeys::Range { lastkey, step, .. },
            flags,
        }] = specs
        {
            if flags & kflag::INCOMPLETE != 0 {
                movable = true;
            }
            return ((*pos, abs_last(*pos, *lastkey), *step), movable);
        }
        let mut first = i32::MAX;
        let mut last: i32 = 0;
        let mut prev_last: i32 = 0;
        for spec in specs {
            let (BeginSearch::Index(pos), FindKeys::Range { lastkey, step, .. }) =
                (spec.begin, spec.find)
            else {
                movable = true;
                continue;
            };
            if step != 1 || (prev_last != 0 && prev_last != pos - 1) {
                movable = true;
                continue;
            }
            if spec.flags & kflag::INCOMPLETE != 0 {
                movable = true;
            }
            first = first.min(pos);
            let abs = abs_last(pos, lastkey);
            // Unsigned comparison, so that -1 (to the end) wins.
            if (abs as u32) > (last as u32) {
                last = abs;
            }
            prev_last = last;
        }
        if first == i32::MAX {
            return ((0, 0, 0), true);
        }
        ((first, last, 1), movable)
    }

    /// True when key positions depend on the arguments (COMMAND INFO's
    /// "movablekeys" flag).
    pub fn movable_keys(&self) -> bool {
        self.legacy_range().1
    }
}

impl KeySource for CommandSpec {
    fn key_specs(&self) -> &'static [KeySpec] {
        self.keys
    }
    fn keys_fn(&self) -> Option<KeysFn> {
        self.keys_fn
    }
    fn key_flags_fn(&self) -> Option<KeyFlagsFn> {
        self.key_flags_fn
    }
}

impl CommandSpec {
    /// Where the command's keys are, as plain data.
    pub fn key_source(&self) -> Keys {
        Keys {
            specs: self.keys,
            find: self.keys_fn,
            flags_of: self.key_flags_fn,
        }
    }
}
