//! The command table: every family's specs, flattened and indexed.
//!
//! Each top-level command and each subcommand gets a numeric id (its index
//! here), used for statistics and by CLIENT LIST's `cmd=` field.

use super::spec::CommandSpec;
use std::collections::HashMap;
use std::sync::OnceLock;

pub struct Entry {
    pub spec: &'static CommandSpec,
    /// "get", or "config|get" for a subcommand.
    pub fullname: String,
    pub parent: Option<usize>,
    pub subcommands: HashMap<String, usize>,
}

pub struct CommandTable {
    pub entries: Vec<Entry>,
    /// Lower-case name to id; looked up on every command, hence foldhash.
    by_name: HashMap<&'static [u8], usize, foldhash::fast::FixedState>,
}

impl CommandTable {
    fn build(families: &[&'static [CommandSpec]]) -> CommandTable {
        let mut entries = Vec::new();
        let mut by_name = HashMap::with_hasher(foldhash::fast::FixedState::default());
        for family in families {
            for spec in family.iter() {
                let id = entries.len();
                assert!(
                    by_name.insert(spec.name.as_bytes(), id).is_none(),
                    "command {} declared twice",
                    spec.name
                );
                entries.push(Entry {
                    spec,
                    fullname: spec.name.to_string(),
                    parent: None,
                    subcommands: HashMap::new(),
                });
                for sub in spec.subcommands {
                    let sub_id = entries.len();
                    entries.push(Entry {
                        spec: sub,
                        fullname: format!("{}|{}", spec.name, sub.name),
                        parent: Some(id),
                        subcommands: HashMap::new(),
                    });
                    entries[id].subcommands.insert(sub.name.to_string(), sub_id);
                }
            }
        }
        CommandTable { entries, by_name }
    }

    /// Case-insensitive look-up of a top-level command.
    #[inline]
    pub fn lookup(&self, name: &[u8]) -> Option<usize> {
        let mut buf = [0u8; 48];
        if name.len() > buf.len() {
            return None;
        }
        for (d, s) in buf.iter_mut().zip(name) {
            *d = s.to_ascii_lowercase();
        }
        self.by_name.get(&buf[..name.len()]).copied()
    }

    /// The command a call `argv` names, as Redis's lookupCommand finds it:
    /// a container's subcommand when one follows (None when unknown), the
    /// container itself when it is named alone (COMMAND GETKEYS, ACL
    /// DRYRUN; the dispatcher has errors of its own for each case).
    pub fn lookup_call(&self, argv: &[&[u8]]) -> Option<usize> {
        let id = self.lookup(argv.first()?)?;
        if self.entries[id].subcommands.is_empty() || argv.len() < 2 {
            return Some(id);
        }
        self.subcommand(id, argv[1])
    }

    pub fn subcommand(&self, parent: usize, name: &[u8]) -> Option<usize> {
        let lower = String::from_utf8_lossy(name).to_ascii_lowercase();
        self.entries[parent].subcommands.get(&lower).copied()
    }

    /// Look-up by full name ("config|get").
    pub fn by_fullname(&self, name: &str) -> Option<usize> {
        let lower = name.to_ascii_lowercase();
        match lower.split_once('|') {
            Some((parent, sub)) => {
                let p = self.lookup(parent.as_bytes())?;
                self.entries[p].subcommands.get(sub).copied()
            }
            None => self.lookup(lower.as_bytes()),
        }
    }

    pub fn get(&self, id: usize) -> &Entry {
        &self.entries[id]
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Ids of the top-level commands, in declaration order.
    pub fn top_level(&self) -> impl Iterator<Item = usize> + '_ {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.parent.is_none())
            .map(|(i, _)| i)
    }
}

static TABLE: OnceLock<CommandTable> = OnceLock::new();

/// Registers the command families into the table: the command layer
/// (`crate::commands`) does so when it builds an engine. The table is
/// data drawn from static specs, the same for every engine of the
/// process, so the first registration builds it and later ones (the same
/// families) find it built.
pub fn register(families: &'static [&'static [CommandSpec]]) -> &'static CommandTable {
    TABLE.get_or_init(|| {
        let table = CommandTable::build(families);
        crate::acl::register_commands(table.entries.iter().map(acl_view).collect());
        table
    })
}

/// A command as ACL rules see it.
fn acl_view(e: &Entry) -> crate::acl::AclCommand {
    crate::acl::AclCommand {
        fullname: e.fullname.clone(),
        parent: e.parent,
        has_subcommands: !e.spec.subcommands.is_empty(),
        no_auth: e.spec.has(super::flags::flag::NO_AUTH),
        categories: e.spec.acl_categories(),
        keys: e.spec.key_source(),
        channels: e.spec.channels,
    }
}

/// The table of every registered command family.
///
/// # Panics
/// Before the families are registered, that is before any engine is built.
pub fn table() -> &'static CommandTable {
    TABLE
        .get()
        .expect("the command families are registered when an engine is built")
}
