//! Access control lists: users, their passwords and what they may run
//! (Redis 7's acl.c).
//!
//! A user has flags (on/off, nopass), a list of SHA-256 password hashes and
//! one or more selectors. A selector says which commands may run (a bitmap
//! over the command table's ids, plus "first arguments" such as
//! `+select|0`), which keys they may touch (glob patterns, each for reading,
//! writing or both) and which Pub/Sub channels. The first selector is the
//! user's root; a command is allowed when any selector allows it with all
//! its keys.
//!
//! Every connection is bound to a user. Permission checks run on every
//! command, so they must cost nothing for the common user who may run
//! everything on every key (the default user): `User::unrestricted` says so
//! in one flag. A user's rules are an immutable `User` behind its
//! `UserCell`; ACL SETUSER builds a new one and swaps it in, bumping the
//! cell's version, and each connection re-reads the rules when it sees the
//! version change (a load of a cache line nobody writes in between).

use crate::command::flags::{chflag, kflag};
use crate::command::keys::key_positions;
use crate::command::keyspec::{ChannelSpec, Keys};
use crate::util::glob::glob_match;
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// Redis's ACL categories, in its order (the order of ACL CAT and of the
/// category bits).
pub const CATEGORIES: [&str; 21] = [
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

/// The bit of a category (case-insensitive), as Redis's
/// ACLGetCommandCategoryFlagByName.
pub fn category_bit(name: &[u8]) -> Option<u32> {
    CATEGORIES
        .iter()
        .position(|c| c.as_bytes().eq_ignore_ascii_case(name))
        .map(|i| 1 << i)
}

/// A command as ACL rules see it, by its id in the command table: given
/// by the command layer when it registers the table (see
/// `register_commands`), so that ACL needs nothing else of it.
pub struct AclCommand {
    /// "get", or "config|get" for a subcommand.
    pub fullname: String,
    pub parent: Option<usize>,
    pub has_subcommands: bool,
    /// Runs before authentication (AUTH, HELLO): no rule refuses it.
    pub no_auth: bool,
    /// Its ACL categories' names ("read", "string"...).
    pub categories: Vec<&'static str>,
    pub keys: Keys,
    /// Its Pub/Sub channel arguments.
    pub channels: Option<ChannelSpec>,
}

/// The registered commands, with what ACL computes of them once: each
/// command's category bits, and the order in which rules walk the
/// commands (each top-level command followed by its subcommands, as
/// Redis walks its command dict and the subcommand dicts).
struct Commands {
    commands: Vec<AclCommand>,
    by_fullname: std::collections::HashMap<String, usize>,
    categories: Vec<u32>,
    order: Vec<usize>,
    subcommands: Vec<Vec<usize>>,
}

static COMMANDS: OnceLock<Commands> = OnceLock::new();

/// Registers the commands ACL rules name, by command id; the first
/// registration stands (the command table is the same for every engine
/// of the process).
pub fn register_commands(commands: Vec<AclCommand>) {
    COMMANDS.get_or_init(|| {
        let categories = commands
            .iter()
            .map(|c| {
                c.categories
                    .iter()
                    .filter_map(|c| category_bit(c.as_bytes()))
                    .fold(0, |a, b| a | b)
            })
            .collect();
        let mut subcommands = vec![Vec::new(); commands.len()];
        for (id, c) in commands.iter().enumerate() {
            if let Some(p) = c.parent {
                subcommands[p].push(id);
            }
        }
        let mut order = Vec::with_capacity(commands.len());
        for (id, c) in commands.iter().enumerate() {
            if c.parent.is_none() {
                order.push(id);
                order.extend(subcommands[id].iter().copied());
            }
        }
        let by_fullname = commands
            .iter()
            .enumerate()
            .map(|(id, c)| (c.fullname.to_ascii_lowercase(), id))
            .collect();
        Commands {
            commands,
            by_fullname,
            categories,
            order,
            subcommands,
        }
    });
}

fn commands() -> &'static Commands {
    COMMANDS
        .get()
        .expect("the commands are registered when an engine is built")
}

/// The commands of a category, as ACL CAT lists them.
pub fn commands_in_category(bit: u32) -> Vec<usize> {
    let cmds = commands();
    cmds.order
        .iter()
        .copied()
        .filter(|&id| cmds.categories[id] & bit != 0)
        .collect()
}

/// The number of command bits: one per command id, plus a last one that
/// only `+@all` sets, so that a description can tell "+@all minus some"
/// (which would admit commands added later) from "-@all plus some".
fn command_bits() -> usize {
    commands().commands.len() + 1
}

const READ: u8 = 1;
const WRITE: u8 = 2;
const READ_WRITE: u8 = READ | WRITE;

#[derive(Clone, PartialEq, Eq)]
struct KeyPattern {
    pattern: Vec<u8>,
    perms: u8,
}

impl KeyPattern {
    fn describe(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(match self.perms {
            READ => b"%R~".as_slice(),
            WRITE => b"%W~",
            _ => b"~",
        });
        out.extend_from_slice(&self.pattern);
    }
}

/// One set of permissions: commands, keys, channels.
#[derive(Clone)]
struct Selector {
    root: bool,
    allcommands: bool,
    allkeys: bool,
    allchannels: bool,
    bits: Vec<u64>,
    /// Command id to the first arguments allowed although the command is
    /// not (`+select|0`), compared case-insensitively.
    firstargs: BTreeMap<usize, Vec<Vec<u8>>>,
    patterns: Vec<KeyPattern>,
    channels: Vec<Vec<u8>>,
}

/// Why a rule was refused (Redis's errno values in ACLSetSelector and
/// ACLSetUser), and the text ACL SETUSER reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleError {
    UnknownCommand,
    Syntax,
    KeyAfterAll,
    ChannelAfterAll,
    NoSuchPassword,
    BadHash,
    FirstArgOfSubcommand,
}

impl RuleError {
    pub fn text(self) -> &'static str {
        match self {
            RuleError::UnknownCommand => "Unknown command or category name in ACL",
            RuleError::Syntax => "Syntax error",
            RuleError::KeyAfterAll => "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            RuleError::ChannelAfterAll => "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
            RuleError::NoSuchPassword => {
                "The password you are trying to remove from the user does not exist"
            }
            RuleError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            RuleError::FirstArgOfSubcommand => {
                "Allowing first-arg of a subcommand is not supported"
            }
        }
    }
}

/// Redis's ACLStringHasSpaces: names and patterns never hold whitespace or
/// NUL, so that rules can be written back as one line.
pub fn has_spaces(s: &[u8]) -> bool {
    s.iter()
        .any(|&c| c == 0 || c == b' ' || (b'\t'..=b'\r').contains(&c))
}

impl Selector {
    fn new(root: bool, allchannels: bool) -> Selector {
        Selector {
            root,
            allcommands: false,
            allkeys: false,
            allchannels,
            bits: vec![0; command_bits().div_ceil(64)],
            firstargs: BTreeMap::new(),
            patterns: Vec::new(),
            channels: Vec::new(),
        }
    }

    fn bit(&self, id: usize) -> bool {
        self.bits
            .get(id / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    fn set_bit(&mut self, id: usize, on: bool) {
        if let Some(w) = self.bits.get_mut(id / 64) {
            if on {
                *w |= 1 << (id % 64);
            } else {
                *w &= !(1 << (id % 64));
                self.allcommands = false;
            }
        }
    }

    fn future_commands(&self) -> bool {
        self.bit(command_bits() - 1)
    }

    /// ACLChangeSelectorPerm: a command, and a container's subcommands.
    fn change_perm(&mut self, id: usize, allow: bool) {
        self.set_bit(id, allow);
        self.firstargs.remove(&id);
        for &sub in &commands().subcommands[id] {
            self.set_bit(sub, allow);
        }
    }

    fn set_category(&mut self, cat: u32, allow: bool) {
        let cmds = commands();
        for &id in &cmds.order {
            if cmds.categories[id] & cat != 0 {
                self.change_perm(id, allow);
            }
        }
    }

    fn set_all(&mut self, allow: bool) {
        let fill = if allow { u64::MAX } else { 0 };
        self.bits.iter_mut().for_each(|w| *w = fill);
        self.allcommands = allow;
        self.firstargs.clear();
    }

    /// Redis's ACLSetSelector: one rule about commands, keys or channels.
    fn apply(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let lower = op.to_ascii_lowercase();
        match lower.as_slice() {
            b"allkeys" | b"~*" => {
                self.allkeys = true;
                self.patterns.clear();
            }
            b"resetkeys" => {
                self.allkeys = false;
                self.patterns.clear();
            }
            b"allchannels" | b"&*" => {
                self.allchannels = true;
                self.channels.clear();
            }
            b"resetchannels" => {
                self.allchannels = false;
                self.channels.clear();
            }
            b"allcommands" | b"+@all" => self.set_all(true),
            b"nocommands" | b"-@all" => self.set_all(false),
            _ => return self.apply_pattern_or_command(op),
        }
        Ok(())
    }

    fn apply_pattern_or_command(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let t = &commands().commands;
        match op.first() {
            Some(b'~') | Some(b'%') => {
                if self.allkeys {
                    return Err(RuleError::KeyAfterAll);
                }
                let (perms, offset) = if op[0] == b'%' {
                    let mut perms = 0;
                    let mut offset = 1;
                    let mut ok = true;
                    while offset < op.len() {
                        match op[offset].to_ascii_uppercase() {
                            b'R' if perms & READ == 0 => perms |= READ,
                            b'W' if perms & WRITE == 0 => perms |= WRITE,
                            b'~' => {
                                offset += 1;
                                break;
                            }
                            _ => {
                                ok = false;
                                break;
                            }
                        }
                        offset += 1;
                    }
                    if perms == 0 || !ok {
                        return Err(RuleError::Syntax);
                    }
                    (perms, offset)
                } else {
                    (READ_WRITE, 1)
                };
                let pattern = &op[offset.min(op.len())..];
                if has_spaces(pattern) {
                    return Err(RuleError::Syntax);
                }
                match self.patterns.iter_mut().find(|p| p.pattern == pattern) {
                    Some(p) => p.perms |= perms,
                    None => self.patterns.push(KeyPattern {
                        pattern: pattern.to_vec(),
                        perms,
                    }),
                }
                self.allkeys = false;
            }
            Some(b'&') => {
                if self.allchannels {
                    return Err(RuleError::ChannelAfterAll);
                }
                let pattern = &op[1..];
                if has_spaces(pattern) {
                    return Err(RuleError::Syntax);
                }
                if !self.channels.iter().any(|c| c == pattern) {
                    self.channels.push(pattern.to_vec());
                }
                self.allchannels = false;
            }
            Some(&sign @ (b'+' | b'-')) if op.get(1) == Some(&b'@') => {
                let cat = category_bit(&op[2..]).ok_or(RuleError::UnknownCommand)?;
                self.set_category(cat, sign == b'+');
            }
            Some(b'+') => {
                let name = &op[1..];
                match name.iter().rposition(|&c| c == b'|') {
                    None => {
                        let id = lookup(name).ok_or(RuleError::UnknownCommand)?;
                        self.change_perm(id, true);
                    }
                    Some(bar) => {
                        let (cmd, sub) = (&name[..bar], &name[bar + 1..]);
                        let id = lookup(cmd).ok_or(RuleError::UnknownCommand)?;
                        if t[id].parent.is_some() {
                            return Err(RuleError::FirstArgOfSubcommand);
                        }
                        if sub.is_empty() {
                            return Err(RuleError::Syntax);
                        }
                        if t[id].has_subcommands {
                            let id = lookup(name).ok_or(RuleError::UnknownCommand)?;
                            self.change_perm(id, true);
                        } else {
                            // Allowing one first argument of a command that
                            // is otherwise blocked (SELECT 0, DEBUG OBJECT).
                            let args = self.firstargs.entry(id).or_default();
                            if !args.iter().any(|a| a.eq_ignore_ascii_case(sub)) {
                                args.push(sub.to_vec());
                            }
                        }
                    }
                }
            }
            Some(b'-') => {
                let id = lookup(&op[1..]).ok_or(RuleError::UnknownCommand)?;
                self.change_perm(id, false);
            }
            _ => return Err(RuleError::Syntax),
        }
        Ok(())
    }

    /// Commands (on, off) of a category under this selector's bits.
    fn count_category(&self, cat: u32) -> (usize, usize) {
        let cmds = commands();
        let (mut on, mut off) = (0, 0);
        for &id in &cmds.order {
            if cmds.categories[id] & cat != 0 {
                if self.bit(id) {
                    on += 1;
                } else {
                    off += 1;
                }
            }
        }
        (on, off)
    }

    /// Redis's ACLDescribeSelectorCommandRules: rules that rebuild exactly
    /// this command bitmap, starting from +@all or -@all, then the best
    /// fitting categories, then single commands.
    fn describe_commands(&self) -> Vec<u8> {
        let mut rules = Vec::new();
        let mut fake = Selector::new(false, false);
        let additive = !self.future_commands();
        if additive {
            rules.extend_from_slice(b"-@all ");
            fake.set_all(false);
        } else {
            rules.extend_from_slice(b"+@all ");
            fake.set_all(true);
        }
        let mut temp = fake.clone();
        temp.bits.clone_from(&self.bits);
        let mut applied = [false; CATEGORIES.len()];
        loop {
            let mut best = None;
            let (mut mindiff, mut maxsame) = (usize::MAX, 0);
            for (j, _) in CATEGORIES.iter().enumerate() {
                if applied[j] {
                    continue;
                }
                let (on, off) = temp.count_category(1 << j);
                let (diff, same) = if additive { (off, on) } else { (on, off) };
                if same > diff && (diff < mindiff || (diff == mindiff && same > maxsame)) {
                    best = Some(j);
                    mindiff = diff;
                    maxsame = same;
                }
            }
            let Some(best) = best else { break };
            fake.set_category(1 << best, additive);
            temp.set_category(1 << best, !additive);
            rules.push(if additive { b'+' } else { b'-' });
            rules.push(b'@');
            rules.extend_from_slice(CATEGORIES[best].as_bytes());
            rules.push(b' ');
            applied[best] = true;
        }
        let t = &commands().commands;
        for &id in &commands().order {
            let userbit = self.bit(id);
            if userbit != fake.bit(id) {
                rules.push(if userbit { b'+' } else { b'-' });
                rules.extend_from_slice(t[id].fullname.as_bytes());
                rules.push(b' ');
                fake.change_perm(id, userbit);
            }
            if !userbit {
                if let Some(args) = self.firstargs.get(&id) {
                    for a in args {
                        rules.push(b'+');
                        rules.extend_from_slice(t[id].fullname.as_bytes());
                        rules.push(b'|');
                        rules.extend_from_slice(a);
                        rules.push(b' ');
                    }
                }
            }
        }
        rules.pop();
        rules
    }

    fn describe_keys(&self) -> Vec<u8> {
        if self.allkeys {
            return b"~*".to_vec();
        }
        let mut out = Vec::new();
        for (i, p) in self.patterns.iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            p.describe(&mut out);
        }
        out
    }

    fn describe_channels(&self) -> Vec<u8> {
        if self.allchannels {
            return b"&*".to_vec();
        }
        let mut out = Vec::new();
        for (i, c) in self.channels.iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            out.push(b'&');
            out.extend_from_slice(c);
        }
        out
    }

    /// ACLDescribeSelector: keys, channels, commands, as ACL LIST shows them.
    fn describe(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if self.allkeys {
            out.extend_from_slice(b"~* ");
        } else {
            for p in &self.patterns {
                p.describe(&mut out);
                out.push(b' ');
            }
        }
        if self.allchannels {
            out.extend_from_slice(b"&* ");
        } else {
            out.extend_from_slice(b"resetchannels ");
            for c in &self.channels {
                out.push(b'&');
                out.extend_from_slice(c);
                out.push(b' ');
            }
        }
        out.extend_from_slice(&self.describe_commands());
        out
    }

    fn key_allowed(&self, key: &[u8], spec_flags: u32) -> bool {
        if self.allkeys {
            return true;
        }
        let need = needed_perms(spec_flags);
        self.patterns
            .iter()
            .any(|p| p.perms & need == need && glob_match(&p.pattern, key, false))
    }

    /// Redis's ACLSelectorCheckCmd.
    fn check(&self, id: usize, argv: &[&[u8]], keys: &mut KeyCache) -> Result<(), Denied> {
        let entry = &commands().commands[id];
        if !self.allcommands && !entry.no_auth && !self.bit(id) {
            let idx = if entry.parent.is_some() { 2 } else { 1 };
            let allowed = match (self.firstargs.get(&id), argv.get(idx)) {
                (Some(args), Some(arg)) => args.iter().any(|a| a.eq_ignore_ascii_case(arg)),
                _ => false,
            };
            if !allowed {
                return Err(Denied::Command);
            }
        }
        if !self.allkeys && entry.keys.any() {
            for &(pos, flags) in keys.get(id, argv) {
                if !self.key_allowed(argv[pos], flags) {
                    return Err(Denied::Key(pos));
                }
            }
        }
        // Channels that are published to or subscribed to; leaving a
        // channel needs no permission.
        if let Some(ch) = entry.channels {
            if !self.allchannels && ch.flags & (chflag::PUBLISH | chflag::SUBSCRIBE) != 0 {
                let pattern = ch.flags & chflag::PATTERN != 0;
                for pos in ch.positions(argv.len()) {
                    if !channel_allowed(&self.channels, argv[pos], pattern) {
                        return Err(Denied::Channel(pos));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Redis's ACLCheckChannelAgainstList: a channel matches the rules as glob
/// patterns; a pattern (PSUBSCRIBE) must equal one of them literally.
pub fn channel_allowed(rules: &[Vec<u8>], channel: &[u8], is_pattern: bool) -> bool {
    rules.iter().any(|rule| {
        if is_pattern {
            rule.as_slice() == channel
        } else {
            glob_match(rule, channel, false)
        }
    })
}

/// The first half of Redis's ACLKillPubsubClientsIfNeeded: None when the
/// rules `new` cannot have revoked a channel that `old` allowed (a
/// selector allows every channel, or the old channel rules are all among
/// the new ones); otherwise the new rules of every selector, against which
/// the user's subscriptions are to be checked.
pub fn revoked_channels(new: &User, old: &User) -> Option<Vec<Vec<u8>>> {
    if new.selectors.iter().any(|s| s.allchannels) {
        return None;
    }
    let upcoming: Vec<Vec<u8>> = new
        .selectors
        .iter()
        .flat_map(|s| s.channels.iter().cloned())
        .collect();
    let kept = old
        .selectors
        .iter()
        .all(|s| !s.allchannels && s.channels.iter().all(|c| upcoming.contains(c)));
    if kept {
        None
    } else {
        Some(upcoming)
    }
}

/// The permissions a key spec's flags need (ACLSelectorCheckKey).
fn needed_perms(spec_flags: u32) -> u8 {
    let mut need = 0;
    if spec_flags & kflag::ACCESS != 0 {
        need |= READ;
    }
    if spec_flags & (kflag::INSERT | kflag::DELETE | kflag::UPDATE) != 0 {
        need |= WRITE;
    }
    need
}

/// A command's keys, found once for all the selectors that look at them.
struct KeyCache {
    keys: Option<Vec<(usize, u32)>>,
}

impl KeyCache {
    fn get(&mut self, id: usize, argv: &[&[u8]]) -> &[(usize, u32)] {
        self.keys.get_or_insert_with(|| {
            key_positions(&commands().commands[id].keys, argv).unwrap_or_default()
        })
    }
}

/// A command name as ACL rules write it: "get", or "config|get".
fn lookup(name: &[u8]) -> Option<usize> {
    std::str::from_utf8(name).ok().and_then(|n| {
        let lower = n.to_ascii_lowercase();
        commands().by_fullname.get(&lower).copied()
    })
}

/// Why a command was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denied {
    Command,
    /// The argument index of the key.
    Key(usize),
    /// The argument index of the channel.
    Channel(usize),
}

impl Denied {
    fn rank(self) -> (u8, usize) {
        match self {
            Denied::Command => (0, 0),
            Denied::Key(i) => (1, i),
            Denied::Channel(i) => (2, i),
        }
    }

    /// Redis's getAclErrorMessage (scripts' errors).
    pub fn message(self) -> &'static str {
        match self {
            Denied::Command => "can't run this command or subcommand",
            Denied::Key(_) => {
                "can't access at least one of the keys mentioned in the command arguments"
            }
            Denied::Channel(_) => "can't publish to the channel mentioned in the command",
        }
    }

    /// The NOPERM error of a refused top-level command (processCommand).
    pub fn noperm(self, fullname: &str) -> String {
        match self {
            Denied::Command => format!(
                "NOPERM this user has no permissions to run the '{fullname}' command"
            ),
            Denied::Key(_) => {
                "NOPERM this user has no permissions to access one of the keys used as arguments"
                    .to_string()
            }
            Denied::Channel(_) => "NOPERM this user has no permissions to access one of the channels used as arguments".to_string(),
        }
    }
}

const FLAG_ENABLED: u8 = 1;
const FLAG_DISABLED: u8 = 2;
const FLAG_NOPASS: u8 = 4;
const FLAG_SKIP_SANITIZE: u8 = 8;
const FLAG_SANITIZE: u8 = 16;
/// In ACLDescribeUser's order.
const USER_FLAGS: [(u8, &str); 5] = [
    (FLAG_ENABLED, "on"),
    (FLAG_DISABLED, "off"),
    (FLAG_NOPASS, "nopass"),
    (FLAG_SKIP_SANITIZE, "skip-sanitize-payload"),
    (FLAG_SANITIZE, "sanitize-payload"),
];

/// A user's rules, immutable once built.
#[derive(Clone)]
pub struct User {
    flags: u8,
    /// SHA-256 hashes, 64 lowercase hex digits each.
    passwords: Vec<Vec<u8>>,
    /// The root selector first.
    selectors: Vec<Selector>,
    /// May run every command on every key and channel: checks are skipped.
    pub unrestricted: bool,
}

impl User {
    fn new(pubsub_all: bool) -> User {
        User {
            flags: FLAG_DISABLED,
            passwords: Vec::new(),
            selectors: vec![Selector::new(true, pubsub_all)],
            unrestricted: false,
        }
    }

    pub fn enabled(&self) -> bool {
        self.flags & FLAG_DISABLED == 0
    }

    pub fn nopass(&self) -> bool {
        self.flags & FLAG_NOPASS != 0
    }

    fn finish(mut self) -> User {
        self.unrestricted = self
            .selectors
            .iter()
            .any(|s| s.allcommands && s.allkeys && s.allchannels);
        self
    }

    /// Redis's ACLSetUser: one rule (user flags, passwords, selectors, or
    /// a rule of the root selector).
    fn apply(&mut self, op: &[u8], pubsub_all: bool) -> Result<(), RuleError> {
        if op.is_empty() {
            return Ok(());
        }
        let lower = op.to_ascii_lowercase();
        match lower.as_slice() {
            b"on" => self.flags = (self.flags | FLAG_ENABLED) & !FLAG_DISABLED,
            b"off" => self.flags = (self.flags | FLAG_DISABLED) & !FLAG_ENABLED,
            b"skip-sanitize-payload" => {
                self.flags = (self.flags | FLAG_SKIP_SANITIZE) & !FLAG_SANITIZE
            }
            b"sanitize-payload" => self.flags = (self.flags | FLAG_SANITIZE) & !FLAG_SKIP_SANITIZE,
            b"nopass" => {
                self.flags |= FLAG_NOPASS;
                self.passwords.clear();
            }
            b"resetpass" => {
                self.flags &= !FLAG_NOPASS;
                self.passwords.clear();
            }
            b"clearselectors" => self.selectors.truncate(1),
            b"reset" => {
                for rule in [
                    &b"resetpass"[..],
                    b"resetkeys",
                    b"resetchannels",
                    b"off",
                    b"sanitize-payload",
                    b"clearselectors",
                    b"-@all",
                ] {
                    self.apply(rule, pubsub_all)?;
                    if rule == b"resetchannels" && pubsub_all {
                        self.apply(b"allchannels", pubsub_all)?;
                    }
                }
            }
            _ => match op[0] {
                b'>' | b'#' => {
                    let hash = if op[0] == b'>' {
                        hash_password(&op[1..])
                    } else {
                        valid_hash(&op[1..])?
                    };
                    if !self.passwords.contains(&hash) {
                        self.passwords.push(hash);
                    }
                    self.flags &= !FLAG_NOPASS;
                }
                b'<' | b'!' => {
                    let hash = if op[0] == b'<' {
                        hash_password(&op[1..])
                    } else {
                        valid_hash(&op[1..])?
                    };
                    let at = self
                        .passwords
                        .iter()
                        .position(|p| *p == hash)
                        .ok_or(RuleError::NoSuchPassword)?;
                    self.passwords.remove(at);
                }
                b'(' if op.ends_with(b")") && op.len() >= 2 => {
                    let mut selector = Selector::new(false, pubsub_all);
                    let args = crate::protocol::parser::split_args(&op[1..op.len() - 1])
                        .ok_or(RuleError::Syntax)?;
                    for a in args {
                        selector.apply(&a)?;
                    }
                    self.selectors.push(selector);
                }
                _ => self.selectors[0].apply(op)?,
            },
        }
        Ok(())
    }

    /// Redis's ACLCheckAllUserCommandPerm: allowed when any selector allows
    /// it; otherwise the most relevant refusal (a key or channel over the
    /// command, the later argument over the earlier).
    pub fn check(&self, id: usize, argv: &[&[u8]]) -> Result<(), Denied> {
        if self.unrestricted {
            return Ok(());
        }
        let mut keys = KeyCache { keys: None };
        let mut worst = Denied::Command;
        for s in &self.selectors {
            match s.check(id, argv, &mut keys) {
                Ok(()) => return Ok(()),
                Err(d) if d.rank() > worst.rank() => worst = d,
                Err(_) => {}
            }
        }
        Err(worst)
    }

    /// Redis's ACLUserCheckCmdWithUnrestrictedKeyAccess for reading: a
    /// selector that allows the command may also read every key (SORT's BY
    /// and GET patterns name keys nobody checked).
    pub fn reads_every_key(&self, id: usize, argv: &[&[u8]]) -> bool {
        if self.unrestricted {
            return true;
        }
        let mut keys = KeyCache { keys: None };
        self.selectors.iter().any(|s| {
            s.check(id, argv, &mut keys).is_ok()
                && (s.allkeys
                    || s.patterns
                        .iter()
                        .any(|p| p.perms & READ == READ && p.pattern == b"*"))
        })
    }

    /// The user's flags, as ACL GETUSER lists them.
    pub fn flag_names(&self) -> Vec<&'static str> {
        USER_FLAGS
            .iter()
            .filter(|(f, _)| self.flags & f != 0)
            .map(|(_, n)| *n)
            .collect()
    }

    pub fn password_hashes(&self) -> &[Vec<u8>] {
        &self.passwords
    }

    /// (commands, keys, channels) of each selector, the root first.
    pub fn selector_descriptions(&self) -> Vec<[Vec<u8>; 3]> {
        self.selectors
            .iter()
            .map(|s| {
                [
                    s.describe_commands(),
                    s.describe_keys(),
                    s.describe_channels(),
                ]
            })
            .collect()
    }

    /// ACLDescribeUser: the rules in ACL LIST's (and the ACL file's) form.
    pub fn describe(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for name in self.flag_names() {
            out.extend_from_slice(name.as_bytes());
            out.push(b' ');
        }
        for p in &self.passwords {
            out.push(b'#');
            out.extend_from_slice(p);
            out.push(b' ');
        }
        for s in &self.selectors {
            if s.root {
                out.extend_from_slice(&s.describe());
            } else {
                out.extend_from_slice(b" (");
                out.extend_from_slice(&s.describe());
                out.push(b')');
            }
        }
        out
    }

    fn password_ok(&self, password: &[u8]) -> bool {
        if self.nopass() {
            return true;
        }
        let hash = hash_password(password);
        // Compare in constant time, as Redis does.
        self.passwords
            .iter()
            .any(|p| p.iter().zip(&hash).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0)
    }
}

fn hash_password(password: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(password);
    let mut hex = Vec::with_capacity(64);
    for b in digest {
        hex.extend_from_slice(format!("{b:02x}").as_bytes());
    }
    hex
}

fn valid_hash(h: &[u8]) -> Result<Vec<u8>, RuleError> {
    if h.len() == 64
        && h.iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
    {
        Ok(h.to_vec())
    } else {
        Err(RuleError::BadHash)
    }
}

/// A user as connections hold it: its name and its current rules.
pub struct UserCell {
    pub name: Vec<u8>,
    rules: RwLock<Arc<User>>,
    version: AtomicU64,
    /// Set by ACL DELUSER: connections of a deleted user are closed.
    deleted: AtomicBool,
}

impl UserCell {
    fn new(name: &[u8], user: User) -> Arc<UserCell> {
        Arc::new(UserCell {
            name: name.to_vec(),
            rules: RwLock::new(Arc::new(user)),
            version: AtomicU64::new(0),
            deleted: AtomicBool::new(false),
        })
    }

    pub fn rules(&self) -> Arc<User> {
        self.rules.read().clone()
    }

    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    pub fn is_deleted(&self) -> bool {
        self.deleted.load(Ordering::Relaxed)
    }

    fn replace(&self, user: User) {
        *self.rules.write() = Arc::new(user);
        self.version.fetch_add(1, Ordering::Release);
    }
}

/// A connection's view of its user: the cell and the rules last read
/// from it.
#[derive(Clone)]
pub struct ClientUser {
    pub cell: Arc<UserCell>,
    rules: Arc<User>,
    version: u64,
}

impl ClientUser {
    pub fn new(cell: Arc<UserCell>) -> ClientUser {
        let version = cell.version();
        let rules = cell.rules();
        ClientUser {
            cell,
            rules,
            version,
        }
    }

    /// The user's current rules.
    #[inline]
    pub fn rules(&mut self) -> &Arc<User> {
        let v = self.cell.version();
        if v != self.version {
            self.rules = self.cell.rules();
            self.version = v;
        }
        &self.rules
    }

    pub fn name(&self) -> &[u8] {
        &self.cell.name
    }

    /// Why the user may not run this command now, if it may not.
    #[inline]
    pub fn denies(&mut self, id: usize, argv: &[&[u8]]) -> Option<Denied> {
        let rules = self.rules();
        if rules.unrestricted {
            return None;
        }
        rules.check(id, argv).err()
    }
}

/// Where a refusal happened (ACL LOG's context).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogContext {
    Toplevel,
    Multi,
    Lua,
}

/// What was refused (ACL LOG's reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogReason {
    Command,
    Key,
    Channel,
    Auth,
}

pub struct LogEntry {
    pub count: u64,
    pub reason: LogReason,
    pub context: LogContext,
    pub object: Vec<u8>,
    pub username: Vec<u8>,
    pub ctime_ms: u64,
    pub client_info: String,
}

/// Log entries closer in time than this are merged (Redis's
/// ACL_LOG_GROUPING_MAX_TIME_DELTA).
const LOG_GROUPING_MS: u64 = 60_000;

/// The users and the security log.
pub struct Acl {
    users: RwLock<BTreeMap<Vec<u8>, Arc<UserCell>>>,
    default_user: Arc<UserCell>,
    /// The default user is on and needs no password: connections start
    /// authenticated (Redis's authRequired).
    default_open: AtomicBool,
    /// `acl-pubsub-default allchannels`: new selectors may use every channel.
    pubsub_all: AtomicBool,
    log: Mutex<VecDeque<LogEntry>>,
}

impl Default for Acl {
    fn default() -> Self {
        Acl::new()
    }
}

impl Acl {
    pub fn new() -> Acl {
        let mut user = User::new(false);
        for rule in ["+@all", "~*", "&*", "on", "nopass"] {
            user.apply(rule.as_bytes(), false)
                .expect("the default user's rules are valid");
        }
        let default_user = UserCell::new(b"default", user.finish());
        let mut users = BTreeMap::new();
        users.insert(b"default".to_vec(), default_user.clone());
        Acl {
            users: RwLock::new(users),
            default_user,
            default_open: AtomicBool::new(true),
            pubsub_all: AtomicBool::new(false),
            log: Mutex::new(VecDeque::new()),
        }
    }

    pub fn default_user(&self) -> Arc<UserCell> {
        self.default_user.clone()
    }

    /// Whether a new connection needs AUTH before running commands.
    #[inline]
    pub fn auth_required(&self) -> bool {
        !self.default_open.load(Ordering::Relaxed)
    }

    /// Whether the default user has no password (protected mode refuses
    /// clients from other hosts then).
    pub fn default_nopass(&self) -> bool {
        self.default_user.rules().nopass()
    }

    pub fn set_pubsub_default(&self, allchannels: bool) {
        self.pubsub_all.store(allchannels, Ordering::Relaxed);
    }

    pub fn user(&self, name: &[u8]) -> Option<Arc<UserCell>> {
        self.users.read().get(name).cloned()
    }

    /// The users in name order.
    pub fn users(&self) -> Vec<Arc<UserCell>> {
        self.users.read().values().cloned().collect()
    }

    /// Redis's ACLStringSetUser: applies the rules to a copy of the user
    /// (a new one when absent) and installs it only when all are valid.
    /// The error is ACL SETUSER's text, with the rule as it was given.
    pub fn set_user(&self, name: &[u8], rules: &[&[u8]]) -> Result<(), Vec<u8>> {
        let merged = merge_selector_args(rules).map_err(|at| {
            [
                b"Unmatched parenthesis in acl selector starting at '",
                crate::error::printf_s(at, usize::MAX),
                b"'.",
            ]
            .concat()
        })?;
        let pubsub_all = self.pubsub_all.load(Ordering::Relaxed);
        let mut users = self.users.write();
        let existing = users.get(name).cloned();
        let mut user = match &existing {
            Some(cell) => (*cell.rules()).clone(),
            None => User::new(pubsub_all),
        };
        for op in &merged {
            user.apply(op, pubsub_all).map_err(|e| {
                [
                    b"Error in ACL SETUSER modifier '",
                    crate::error::printf_s(op, usize::MAX),
                    b"': ",
                    e.text().as_bytes(),
                ]
                .concat()
            })?;
        }
        let user = user.finish();
        if name == b"default" {
            self.default_open
                .store(user.enabled() && user.nopass(), Ordering::Relaxed);
        }
        match existing {
            Some(cell) => cell.replace(user),
            None => {
                users.insert(name.to_vec(), UserCell::new(name, user));
            }
        }
        Ok(())
    }

    /// ACL DELUSER of one user; false when there was none. The caller
    /// closes the user's connections.
    pub fn delete_user(&self, name: &[u8]) -> Option<Arc<UserCell>> {
        let cell = self.users.write().remove(name)?;
        cell.deleted.store(true, Ordering::Relaxed);
        Some(cell)
    }

    /// ACL LOAD: the users of `staged` replace every user. The default
    /// user keeps its cell (connections stay bound to it) and takes the
    /// new rules. Returns the names of the other users that were replaced.
    pub fn replace_all(&self, staged: Acl) -> Vec<Vec<u8>> {
        let mut new_users = staged.users.into_inner();
        let default_rules = new_users
            .remove(b"default".as_slice())
            .map(|cell| (*cell.rules()).clone())
            .expect("every user set has the default user");
        let mut users = self.users.write();
        let gone: Vec<Vec<u8>> = users
            .keys()
            .filter(|n| n.as_slice() != b"default")
            .cloned()
            .collect();
        for name in &gone {
            if let Some(cell) = users.remove(name) {
                cell.deleted.store(true, Ordering::Relaxed);
            }
        }
        self.default_open.store(
            default_rules.enabled() && default_rules.nopass(),
            Ordering::Relaxed,
        );
        self.default_user.replace(default_rules);
        users.extend(new_users);
        gone
    }

    /// `requirepass`: the default user's only password, or none.
    pub fn set_default_password(&self, password: &[u8]) {
        let rule = [b">".as_slice(), password].concat();
        let rules: Vec<&[u8]> = if password.is_empty() {
            vec![b"resetpass", b"nopass"]
        } else {
            vec![b"resetpass", &rule]
        };
        self.set_user(b"default", &rules)
            .expect("password rules are valid");
    }

    /// Redis's ACLCheckUserCredentials: the user when it exists, is on and
    /// the password matches.
    pub fn authenticate(&self, name: &[u8], password: &[u8]) -> Option<Arc<UserCell>> {
        let cell = self.user(name)?;
        let user = cell.rules();
        (user.enabled() && user.password_ok(password)).then_some(cell)
    }

    /// Redis's addACLLogEntry, with its grouping of similar events.
    pub fn log(&self, mut entry: LogEntry, max_len: usize) {
        let mut log = self.log.lock();
        let found = log.iter().take(10).position(|e| {
            e.reason == entry.reason
                && e.context == entry.context
                && e.ctime_ms.abs_diff(entry.ctime_ms) <= LOG_GROUPING_MS
                && e.object == entry.object
                && e.username == entry.username
        });
        if let Some(i) = found {
            let mut e = log.remove(i).expect("found above");
            e.count += 1;
            e.ctime_ms = entry.ctime_ms;
            e.client_info = std::mem::take(&mut entry.client_info);
            log.push_front(e);
            return;
        }
        log.push_front(entry);
        log.truncate(max_len);
    }

    pub fn log_reset(&self) {
        self.log.lock().clear();
    }

    /// Visits the newest `count` entries.
    pub fn log_entries<R>(&self, f: impl FnOnce(&VecDeque<LogEntry>) -> R) -> R {
        f(&self.log.lock())
    }
}

/// Redis's ACLMergeSelectorArguments: joins "(+get" "~key)" into one
/// "(+get ~key)"; Err(the opening argument) when a parenthesis stays open.
fn merge_selector_args<'a>(args: &[&'a [u8]]) -> Result<Vec<Vec<u8>>, &'a [u8]> {
    let mut out = Vec::new();
    let mut open: Option<(Vec<u8>, &'a [u8])> = None;
    for &op in args {
        if op.first() == Some(&b'(') && op.last() != Some(&b')') {
            open = Some((op.to_vec(), op));
            continue;
        }
        if let Some((sel, _)) = open.as_mut() {
            sel.push(b' ');
            sel.extend_from_slice(op);
            if op.last() == Some(&b')') {
                out.push(open.take().expect("open").0);
            }
            continue;
        }
        out.push(op.to_vec());
    }
    match open {
        Some((_, at)) => Err(at),
        None => Ok(out),
    }
}

/// A random password of `bits` bits as hex (ACL GENPASS), from the
/// kernel's random source.
pub fn random_hex(bits: usize) -> String {
    let chars = bits.div_ceil(4);
    let mut bytes = vec![0u8; chars.div_ceil(2)];
    let mut filled = 0;
    while filled < bytes.len() {
        // SAFETY: the pointer and length describe the unfilled tail of a
        // live buffer.
        let n = unsafe {
            libc::getrandom(bytes[filled..].as_mut_ptr().cast(), bytes.len() - filled, 0)
        };
        if n <= 0 {
            // No kernel source (it never fails on Linux past early boot):
            // fall back to the process's generator.
            bytes[filled..]
                .iter_mut()
                .for_each(|b| *b = fastrand::u8(..));
            break;
        }
        filled += n as usize;
    }
    let mut hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    hex.truncate(chars);
    hex
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command families, registered as building an engine does.
    fn registered() {
        crate::command::table::register(crate::commands::FAMILIES);
    }

    fn user(rules: &[&str]) -> User {
        let mut u = User::new(false);
        for r in rules {
            u.apply(r.as_bytes(), false).unwrap();
        }
        u.finish()
    }

    fn id(name: &str) -> usize {
        lookup(name.as_bytes()).unwrap()
    }

    #[test]
    fn new_users_may_do_nothing() {
        registered();
        let u = user(&[]);
        assert_eq!(u.check(id("get"), &[b"get", b"k"]), Err(Denied::Command));
        assert_eq!(u.describe(), b"off resetchannels -@all");
    }

    #[test]
    fn channels_match_as_globs_and_patterns_literally() {
        registered();
        let u = user(&["+@all", "~*", "resetchannels", "&news.*", "&exact"]);
        assert_eq!(
            u.check(id("publish"), &[b"publish", b"news.1", b"m"]),
            Ok(())
        );
        assert_eq!(
            u.check(id("publish"), &[b"publish", b"other", b"m"]),
            Err(Denied::Channel(1))
        );
        assert_eq!(
            u.check(id("subscribe"), &[b"subscribe", b"exact", b"nope"]),
            Err(Denied::Channel(2))
        );
        // A pattern subscription must be one of the rules as written.
        assert_eq!(
            u.check(id("psubscribe"), &[b"psubscribe", b"news.*"]),
            Ok(())
        );
        assert_eq!(
            u.check(id("psubscribe"), &[b"psubscribe", b"news.1*"]),
            Err(Denied::Channel(1))
        );
        // Leaving needs no permission.
        assert_eq!(u.check(id("unsubscribe"), &[b"unsubscribe", b"x"]), Ok(()));
        assert_eq!(
            u.check(id("spublish"), &[b"spublish", b"exact", b"m"]),
            Ok(())
        );
    }

    #[test]
    fn revoking_channels_is_told_from_keeping_them() {
        registered();
        let old = user(&["&a", "&b*"]);
        assert!(revoked_channels(&user(&["&a", "&b*", "&c"]), &old).is_none());
        assert!(revoked_channels(&user(&["allchannels"]), &old).is_none());
        assert_eq!(
            revoked_channels(&user(&["&a"]), &old),
            Some(vec![b"a".to_vec()])
        );
        // From every channel to some: anything may be revoked.
        assert!(revoked_channels(&user(&["&a"]), &user(&["allchannels"])).is_some());
    }

    #[test]
    fn keys_are_checked_for_read_and_write() {
        registered();
        let u = user(&["+@all", "%R~r*", "%W~w*", "~rw*"]);
        assert_eq!(u.check(id("get"), &[b"get", b"r1"]), Ok(()));
        assert_eq!(
            u.check(id("set"), &[b"set", b"r1", b"v"]),
            Err(Denied::Key(1))
        );
        assert_eq!(u.check(id("set"), &[b"set", b"w1", b"v"]), Ok(()));
        assert_eq!(u.check(id("get"), &[b"get", b"w1"]), Err(Denied::Key(1)));
        assert_eq!(u.check(id("copy"), &[b"copy", b"r1", b"w2"]), Ok(()));
        assert_eq!(
            u.check(id("copy"), &[b"copy", b"w1", b"r2"]),
            Err(Denied::Key(1))
        );
        assert_eq!(u.check(id("get"), &[b"get", b"rw"]), Ok(()));
    }

    #[test]
    fn descriptions_rebuild_the_same_bitmap() {
        registered();
        for rules in [
            &["+@all", "-@string", "+incr", "-debug", "+debug|digest"][..],
            &["-@all", "+@string", "-incr", "+acl", "+client|id"],
            &["+@all", "-client", "+client|id", "+client|setname"],
            &["-@all", "+select|0", "+select|1"],
        ] {
            let u = user(rules);
            let s = &u.selectors[0];
            let desc = s.describe_commands();
            let mut again = Selector::new(true, false);
            for r in desc.split(|&c| c == b' ') {
                again.apply(r).unwrap();
            }
            assert!(again.bits == s.bits, "{}", String::from_utf8_lossy(&desc));
            assert_eq!(again.firstargs, s.firstargs);
        }
    }

    #[test]
    fn selectors_allow_what_the_root_does_not() {
        registered();
        let u = user(&["+get", "~a*", "(+set ~b*)"]);
        assert_eq!(u.check(id("get"), &[b"get", b"a1"]), Ok(()));
        assert_eq!(u.check(id("set"), &[b"set", b"b1", b"v"]), Ok(()));
        assert_eq!(u.check(id("get"), &[b"get", b"b1"]), Err(Denied::Key(1)));
        assert_eq!(
            u.check(id("set"), &[b"set", b"a1", b"v"]),
            Err(Denied::Key(1))
        );
    }

    #[test]
    fn bad_rules_are_refused() {
        registered();
        let mut u = User::new(false);
        assert_eq!(u.apply(b"+nosuch", false), Err(RuleError::UnknownCommand));
        assert_eq!(u.apply(b"+@nosuch", false), Err(RuleError::UnknownCommand));
        assert_eq!(u.apply(b"%X~a", false), Err(RuleError::Syntax));
        assert_eq!(u.apply(b"#abc", false), Err(RuleError::BadHash));
        assert_eq!(u.apply(b"<nope", false), Err(RuleError::NoSuchPassword));
        assert_eq!(
            u.apply(b"+config|get|x", false),
            Err(RuleError::FirstArgOfSubcommand)
        );
        u.apply(b"allkeys", false).unwrap();
        assert_eq!(u.apply(b"~a", false), Err(RuleError::KeyAfterAll));
    }

    #[test]
    fn passwords_are_kept_hashed() {
        registered();
        let u = user(&[">secret", "on"]);
        assert!(u.password_ok(b"secret"));
        assert!(!u.password_ok(b"other"));
        assert_eq!(
            u.passwords[0],
            b"2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b"
        );
    }

    #[test]
    fn random_hex_has_the_asked_length() {
        registered();
        assert_eq!(random_hex(256).len(), 64);
        assert_eq!(random_hex(5).len(), 2);
        assert!(random_hex(4096).bytes().all(|c| c.is_ascii_hexdigit()));
    }
}
