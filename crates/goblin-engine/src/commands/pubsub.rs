//! Pub/Sub commands (Redis's pubsub.c): SUBSCRIBE, UNSUBSCRIBE,
//! PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, their shard forms SSUBSCRIBE,
//! SUNSUBSCRIBE, SPUBLISH, and PUBSUB's introspection. The registry of
//! subscriptions and the delivery of messages live in `crate::pubsub`.
//!
//! Confirmations and messages are pushes: `>` in RESP3, arrays in RESP2,
//! and never dropped by CLIENT REPLY OFF or SKIP.

use crate::command::spec::{chflag, flag, ChannelSpec, CmdResult, CommandSpec, Group, KeySpec};
use crate::command::{kflag, Ctx};
use crate::protocol::ReplyWriter;
use crate::pubsub::{Kind, Publisher};
use crate::Error;

/// A subscription confirmation or its undoing: `[word, name, count]`, the
/// name null when an UNSUBSCRIBE without arguments had nothing to leave.
fn confirm(out: &mut ReplyWriter, word: &[u8], name: Option<&[u8]>, count: usize) {
    let start = out.len();
    out.push(3);
    out.bulk(word);
    match name {
        Some(n) => out.bulk(n),
        None => out.null(),
    }
    out.int(count as i64);
    out.mark_push(start);
}

/// SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE: joins each name in turn, confirming
/// each with the count of subscriptions so far.
fn subscribe(ctx: &mut Ctx, kind: Kind, names: &[&[u8]]) -> CmdResult {
    // Redis's CLIENT_DENY_BLOCKING clients (scripts; for SSUBSCRIBE also
    // transactions) expect one reply per command.
    if ctx.in_script || (kind == Kind::Shard && ctx.in_multi) {
        let name = match kind {
            Kind::Channel => "SUBSCRIBE",
            Kind::Pattern => "PSUBSCRIBE",
            Kind::Shard => "SSUBSCRIBE",
        };
        return Err(Error::err(format_args!(
            "{name} isn't allowed for a DENY BLOCKING client"
        )));
    }
    let info = ctx.client.info.clone();
    let subs = ctx.client.pubsub.get_or_insert_with(Default::default);
    for name in names {
        ctx.engine.pubsub().subscribe(&info, subs, kind, name);
        confirm(
            ctx.out,
            kind.subscribe_word(),
            Some(name),
            subs.count_for(kind),
        );
    }
    Ok(())
}

/// UNSUBSCRIBE, PUNSUBSCRIBE, SUNSUBSCRIBE: leaves the names given, or
/// every subscription of the kind; each is confirmed with the count left,
/// and a client that had nothing to leave still gets one confirmation.
fn unsubscribe(ctx: &mut Ctx, kind: Kind, names: &[&[u8]]) -> CmdResult {
    let info = ctx.client.info.clone();
    let engine = ctx.engine;
    let word = kind.unsubscribe_word();
    let Some(subs) = ctx.client.pubsub.as_mut() else {
        if names.is_empty() {
            confirm(ctx.out, word, None, 0);
        }
        for name in names {
            confirm(ctx.out, word, Some(name), 0);
        }
        return Ok(());
    };
    let leave = |subs: &mut crate::pubsub::Subscriptions, out: &mut ReplyWriter, name: &[u8]| {
        let left = engine.pubsub().unsubscribe(&info, subs, kind, name);
        // Messages delivered before the subscription ended precede its
        // confirmation.
        info.mailbox.drain_into(out);
        confirm(out, word, Some(name), subs.count_for(kind));
        left
    };
    if names.is_empty() {
        let all = subs.names_of(kind);
        for name in &all {
            leave(subs, ctx.out, name);
        }
        if all.is_empty() {
            confirm(ctx.out, word, None, subs.count_for(kind));
        }
    } else {
        for name in names {
            leave(subs, ctx.out, name);
        }
    }
    if subs.is_empty() {
        ctx.client.pubsub = None;
    }
    Ok(())
}

/// PUBLISH and SPUBLISH through the registry; a subscribed publisher gets
/// its own copy in its reply buffer, before the reply. Returns the
/// number of receivers.
pub fn publish(ctx: &mut Ctx, kind: Kind, channel: &[u8], message: &[u8]) -> usize {
    let publisher = if ctx.client.subscribed() {
        Some(Publisher {
            info: &ctx.client.info,
            out: ctx.out,
        })
    } else {
        None
    };
    ctx.engine
        .pubsub()
        .publish(kind, channel, message, publisher)
}

fn subscribe_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    subscribe(ctx, Kind::Channel, &args[1..])
}

fn unsubscribe_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    unsubscribe(ctx, Kind::Channel, &args[1..])
}

fn psubscribe_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    subscribe(ctx, Kind::Pattern, &args[1..])
}

fn punsubscribe_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    unsubscribe(ctx, Kind::Pattern, &args[1..])
}

fn ssubscribe_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    subscribe(ctx, Kind::Shard, &args[1..])
}

fn sunsubscribe_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    unsubscribe(ctx, Kind::Shard, &args[1..])
}

fn publish_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let n = publish(ctx, Kind::Channel, args[1], args[2]);
    // Replicas publish it to their own subscribers (Redis's
    // forceCommandPropagation with PROPAGATE_REPL).
    ctx.effects.forced = true;
    ctx.effects.repl_only = true;
    ctx.out.int(n as i64);
    Ok(())
}

fn spublish_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let n = publish(ctx, Kind::Shard, args[1], args[2]);
    ctx.out.int(n as i64);
    Ok(())
}

/// PUBSUB CHANNELS / SHARDCHANNELS [pattern].
fn channel_list(ctx: &mut Ctx, args: &[&[u8]], kind: Kind) -> CmdResult {
    if args.len() > 3 {
        return Err(super::help::subcommand_syntax_error(args, "PUBSUB"));
    }
    let names = ctx.engine.pubsub().channels(kind, args.get(2).copied());
    ctx.out.array(names.len());
    for n in &names {
        ctx.out.bulk(n);
    }
    Ok(())
}

/// PUBSUB NUMSUB / SHARDNUMSUB [channel ...]: each channel and its count.
fn numsub(ctx: &mut Ctx, args: &[&[u8]], kind: Kind) -> CmdResult {
    ctx.out.array((args.len() - 2) * 2);
    for ch in &args[2..] {
        ctx.out.bulk(ch);
        ctx.out.int(ctx.engine.pubsub().numsub(kind, ch) as i64);
    }
    Ok(())
}

fn pubsub_channels(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    channel_list(ctx, args, Kind::Channel)
}

fn pubsub_shardchannels(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    channel_list(ctx, args, Kind::Shard)
}

fn pubsub_numsub(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    numsub(ctx, args, Kind::Channel)
}

fn pubsub_shardnumsub(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    numsub(ctx, args, Kind::Shard)
}

fn pubsub_numpat(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out.int(ctx.engine.pubsub().pattern_count() as i64);
    Ok(())
}

fn pubsub_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    super::help::reply_help(
        ctx,
        "PUBSUB",
        &[
            "CHANNELS [<pattern>]",
            "    Return the currently active channels matching a <pattern> (default: '*').",
            "NUMPAT",
            "    Return number of subscriptions to patterns.",
            "NUMSUB [<channel> ...]",
            "    Return the number of subscribers for the specified channels, excluding",
            "    pattern subscriptions(default: no channels).",
            "SHARDCHANNELS [<pattern>]",
            "    Return the currently active shard level channels matching a <pattern> (default: '*').",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Return the number of subscribers for the specified shard level channel(s)",
        ],
    );
    Ok(())
}

const SUB: u32 = flag::PUBSUB | flag::NOSCRIPT | flag::LOADING | flag::STALE | flag::SUBSCRIBED_OK;
const PUB: u32 = flag::PUBSUB | flag::LOADING | flag::STALE | flag::FAST | flag::MAY_REPLICATE;
const INTROSPECT: u32 = flag::PUBSUB | flag::LOADING | flag::STALE;

const fn channels(flags: u32, last: i32) -> Option<ChannelSpec> {
    Some(ChannelSpec {
        flags,
        first: 1,
        last,
    })
}

static PUBSUB_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "channels",
        arity: -2,
        flags: INTROSPECT,
        group: Group::PubSub,
        since: "2.8.0",
        summary: "List active channels",
        complexity: "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
        syntax: "[pattern:pattern]",
        handler: pubsub_channels,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "help",
        arity: 2,
        flags: flag::LOADING | flag::STALE,
        group: Group::PubSub,
        since: "6.2.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        handler: pubsub_help,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "numpat",
        arity: 2,
        flags: INTROSPECT,
        group: Group::PubSub,
        since: "2.8.0",
        summary: "Get the count of unique patterns pattern subscriptions",
        complexity: "O(1)",
        handler: pubsub_numpat,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "numsub",
        arity: -2,
        flags: INTROSPECT,
        group: Group::PubSub,
        since: "2.8.0",
        summary: "Get the count of subscribers for channels",
        complexity: "O(N) for the NUMSUB subcommand, where N is the number of requested channels",
        syntax: "[channel:string...]",
        handler: pubsub_numsub,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "shardchannels",
        arity: -2,
        flags: INTROSPECT,
        group: Group::PubSub,
        since: "7.0.0",
        summary: "List active shard channels",
        complexity: "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).",
        syntax: "[pattern:pattern]",
        handler: pubsub_shardchannels,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "shardnumsub",
        arity: -2,
        flags: INTROSPECT,
        group: Group::PubSub,
        since: "7.0.0",
        summary: "Get the count of subscribers for shard channels",
        complexity: "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels",
        syntax: "[shardchannel:string...]",
        handler: pubsub_shardnumsub,
        ..CommandSpec::DEFAULT
    },
];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "subscribe",
        arity: -2,
        flags: SUB,
        channels: channels(chflag::SUBSCRIBE, -1),
        group: Group::PubSub,
        since: "2.0.0",
        summary: "Listen for messages published to the given channels",
        complexity: "O(N) where N is the number of channels to subscribe to.",
        history: &[],
        syntax: "channel:string...",
        handler: subscribe_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "unsubscribe",
        arity: -1,
        flags: SUB,
        channels: channels(chflag::UNSUBSCRIBE, -1),
        group: Group::PubSub,
        since: "2.0.0",
        summary: "Stop listening for messages posted to the given channels",
        complexity: "O(N) where N is the number of clients already subscribed to a channel.",
        syntax: "[channel:string...]",
        handler: unsubscribe_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "psubscribe",
        arity: -2,
        flags: SUB,
        channels: channels(chflag::SUBSCRIBE | chflag::PATTERN, -1),
        group: Group::PubSub,
        since: "2.0.0",
        summary: "Listen for messages published to channels matching the given patterns",
        complexity: "O(N) where N is the number of patterns the client is already subscribed to.",
        syntax: "pattern:block(pattern:pattern)...",
        handler: psubscribe_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "punsubscribe",
        arity: -1,
        flags: SUB,
        channels: channels(chflag::UNSUBSCRIBE | chflag::PATTERN, -1),
        group: Group::PubSub,
        since: "2.0.0",
        summary: "Stop listening for messages posted to channels matching the given patterns",
        complexity: "O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client).",
        syntax: "[pattern:pattern...]",
        handler: punsubscribe_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "publish",
        arity: 3,
        flags: PUB,
        channels: channels(chflag::PUBLISH, 1),
        group: Group::PubSub,
        since: "2.0.0",
        summary: "Post a message to a channel",
        complexity: "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).",
        syntax: "channel:string message:string",
        handler: publish_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "pubsub",
        arity: -2,
        group: Group::PubSub,
        subcommands: PUBSUB_SUBCOMMANDS,
        since: "2.8.0",
        summary: "A container for Pub/Sub commands",
        complexity: "Depends on subcommand.",
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "ssubscribe",
        arity: -2,
        flags: SUB,
        keys: &[KeySpec::range(1, -1, 1, kflag::NOT_KEY)],
        channels: channels(chflag::SUBSCRIBE, -1),
        group: Group::PubSub,
        since: "7.0.0",
        summary: "Listen for messages published to the given shard channels",
        complexity: "O(N) where N is the number of shard channels to subscribe to.",
        syntax: "shardchannel:string...",
        handler: ssubscribe_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "sunsubscribe",
        arity: -1,
        flags: SUB,
        keys: &[KeySpec::range(1, -1, 1, kflag::NOT_KEY)],
        channels: channels(chflag::UNSUBSCRIBE, -1),
        group: Group::PubSub,
        since: "7.0.0",
        summary: "Stop listening for messages posted to the given shard channels",
        complexity: "O(N) where N is the number of clients already subscribed to a shard channel.",
        syntax: "[shardchannel:string...]",
        handler: sunsubscribe_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "spublish",
        arity: 3,
        flags: PUB,
        keys: &[KeySpec::at(1, kflag::NOT_KEY)],
        channels: channels(chflag::PUBLISH, 1),
        group: Group::PubSub,
        since: "7.0.0",
        summary: "Post a message to a shard channel",
        complexity: "O(N) where N is the number of clients subscribed to the receiving shard channel.",
        syntax: "shardchannel:string message:string",
        handler: spublish_command,
        ..CommandSpec::DEFAULT
    },
];
