//! # goblin-module
//!
//! The GOBLIN.* family as a Redis/Valkey module, `libgoblin_module.so`:
//!
//! ```text
//! redis-server --loadmodule target/release/libgoblin_module.so
//! ```
//!
//! It adds the family's commands (GOBLIN.DECRPOS, GOBLIN.INCRTTL,
//! GOBLIN.ZWINDOW...) to a Redis 7.0+ or Valkey server, so that they run
//! where goblin-server does not: on a Redis or Valkey Cluster, beside
//! other modules, on a managed server that loads modules.
//!
//! The module holds no semantics. The family crate (`goblin-family`)
//! defines every command once, against its `Store` trait; this crate
//! implements `Store` over the module API ([`store::KeyStore`]) and, for
//! each call, hands the arguments to `goblin_family::execute` and sends
//! back its reply or error. goblin-server hosts the same functions over
//! its own keyspace, so both answer alike, byte for byte.
//!
//! What the module does itself is what a host must:
//! - register each command from the family's table
//!   (`goblin_family::COMMANDS`): its flags (`write fast`, plus `deny-oom`
//!   for those that can grow memory), its key at position 1 (so a cluster
//!   routes it by the key's slot), and through RedisModule_SetCommandInfo
//!   its arity, key spec, summary and arguments (COMMAND INFO, COMMAND
//!   DOCS, COMMAND GETKEYS); Redis itself then refuses a wrong argument
//!   count with the same error text goblin-server gives;
//! - replicate (to replicas and the append-only file) what Redis's own
//!   commands would: nothing for a call that failed or changed nothing; the
//!   call verbatim when replaying it gives the same result; and for the
//!   commands that read the clock (they report their changes through
//!   `Store::effect`), those effects instead (`SET ... PXAT`,
//!   `PEXPIREAT`, `ZADD`, `ZREMRANGEBYSCORE`), so that a replica or a
//!   reload sees the same deadlines;
//! - announce each change's keyspace event, as goblin-server does (see
//!   [`store`]).
//!
//! It needs the module API of Redis 7.0 (RedisModule_SetCommandInfo,
//! RedisModule_GetAbsExpire, RedisModule_SetAbsExpire) and refuses to load
//! on a server without it; Valkey 7.2 and later have it too.

mod api;
pub mod store;

use api::f;
use goblin_family::{Command, KeyAccess, Reply};
use redis_module::raw::{self, RedisModuleCtx, RedisModuleString};
use redis_module::{redis_module, Context, RedisString, Status};
use std::ffi::{c_int, CString};
use std::panic::{self, AssertUnwindSafe};
use std::ptr;
use store::KeyStore;

/// Every family command runs through this one handler: the name in
/// `argv[0]` picks the command (Redis has already checked the arity).
unsafe extern "C" fn goblin_command(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int {
    let argv: &[*mut RedisModuleString] = if argv.is_null() || argc <= 0 {
        &[]
    } else {
        unsafe { std::slice::from_raw_parts(argv, argc as usize) }
    };
    let args: Vec<&[u8]> = argv
        .iter()
        .map(|&s| unsafe { api::string_bytes(s) })
        .collect();
    let Some((name, args)) = args.split_first() else {
        return reply_error(ctx, "ERR wrong number of arguments");
    };
    let mut store = unsafe { KeyStore::new(ctx) };
    // A panic must not unwind into Redis (it would abort the server).
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        goblin_family::execute(&mut store, name, args)
    }));
    match result {
        Ok(Ok(reply)) => {
            store.finish(true);
            unsafe {
                match reply {
                    Reply::Int(n) => {
                        f(raw::RedisModule_ReplyWithLongLong)(ctx, n);
                    }
                    Reply::Pair(a, b) => {
                        f(raw::RedisModule_ReplyWithArray)(ctx, 2);
                        f(raw::RedisModule_ReplyWithLongLong)(ctx, a);
                        f(raw::RedisModule_ReplyWithLongLong)(ctx, b);
                    }
                }
            }
            raw::REDISMODULE_OK as c_int
        }
        Ok(Err(error)) => {
            store.finish(false);
            reply_error(ctx, &error.text())
        }
        Err(_) => {
            store.finish(false);
            reply_error(ctx, "ERR internal error in the goblin module")
        }
    }
}

fn reply_error(ctx: *mut RedisModuleCtx, text: &str) -> c_int {
    let text = CString::new(text).unwrap_or_default();
    unsafe { f(raw::RedisModule_ReplyWithError)(ctx, text.as_ptr()) };
    raw::REDISMODULE_OK as c_int
}

/// The API functions the module calls, each present since Redis 7.0.
fn missing_api() -> Option<&'static str> {
    macro_rules! check {
        ($($name:ident),* $(,)?) => {
            $(
                if unsafe { raw::$name }.is_none() {
                    return Some(stringify!($name));
                }
            )*
        };
    }
    check!(
        RedisModule_CreateCommand,
        RedisModule_GetCommand,
        RedisModule_SetCommandInfo,
        RedisModule_SetModuleOptions,
        RedisModule_Milliseconds,
        RedisModule_OpenKey,
        RedisModule_CloseKey,
        RedisModule_KeyType,
        RedisModule_SignalModifiedKey,
        RedisModule_StringDMA,
        RedisModule_StringTruncate,
        RedisModule_StringSet,
        RedisModule_DeleteKey,
        RedisModule_GetAbsExpire,
        RedisModule_SetAbsExpire,
        RedisModule_HashGet,
        RedisModule_HashSet,
        RedisModule_ZsetAdd,
        RedisModule_ZsetRem,
        RedisModule_ZsetScore,
        RedisModule_ValueLength,
        RedisModule_ZsetFirstInScoreRange,
        RedisModule_ZsetLastInScoreRange,
        RedisModule_ZsetRangeEndReached,
        RedisModule_ZsetRangeCurrentElement,
        RedisModule_ZsetRangeNext,
        RedisModule_ZsetRangeStop,
        RedisModule_CreateString,
        RedisModule_FreeString,
        RedisModule_StringPtrLen,
        RedisModule_Replicate,
        RedisModule_ReplicateVerbatim,
        RedisModule_NotifyKeyspaceEvent,
        RedisModule_ReplyWithLongLong,
        RedisModule_ReplyWithArray,
        RedisModule_ReplyWithError,
    );
    None
}

const COMMAND_INFO_VERSION: raw::RedisModuleCommandInfoVersion =
    raw::RedisModuleCommandInfoVersion {
        version: 1,
        sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
        sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
        sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
    };

/// The argument type of COMMAND DOCS for a `name:type` word of the
/// family's syntax.
fn arg_type(word: &str) -> raw::RedisModuleCommandArgType {
    match word {
        "key" => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY,
        "integer" => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
        "double" => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_DOUBLE,
        _ => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
    }
}

/// Registers one family command as its table entry describes it.
fn register(ctx: *mut RedisModuleCtx, command: &Command) -> Result<(), String> {
    let cstr = |s: &str| CString::new(s).map_err(|e| e.to_string());
    let name = cstr(command.name)?;
    let flags = cstr(command.module_flags())?;
    unsafe {
        // The key is argument 1 (first = last = 1, step 1): what a cluster
        // hashes to route the call.
        if f(raw::RedisModule_CreateCommand)(
            ctx,
            name.as_ptr(),
            Some(goblin_command),
            flags.as_ptr(),
            1,
            1,
            1,
        ) != raw::REDISMODULE_OK as c_int
        {
            return Err(format!("cannot create command {}", command.name));
        }
        let handle = f(raw::RedisModule_GetCommand)(ctx, name.as_ptr());
        if handle.is_null() {
            return Err(format!("cannot find command {}", command.name));
        }

        let mut specs: [raw::RedisModuleCommandKeySpec; 2] = std::mem::zeroed();
        specs[0].flags = (raw::REDISMODULE_CMD_KEY_RW
            | raw::REDISMODULE_CMD_KEY_ACCESS
            | match command.key {
                KeyAccess::Update => raw::REDISMODULE_CMD_KEY_UPDATE,
                KeyAccess::Delete => raw::REDISMODULE_CMD_KEY_DELETE,
            }) as u64;
        specs[0].begin_search_type =
            raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
        specs[0].bs.index.pos = 1;
        specs[0].find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
        specs[0].fk.range.lastkey = 0;
        specs[0].fk.range.keystep = 1;
        specs[0].fk.range.limit = 0;

        // COMMAND DOCS arguments, from the `name:type` words of the syntax
        // (a zeroed entry ends the array).
        let words: Vec<(CString, &str)> = command
            .syntax
            .split_whitespace()
            .map(|w| {
                let (arg, kind) = w.split_once(':').unwrap_or((w, "string"));
                Ok((cstr(arg)?, kind))
            })
            .collect::<Result<_, String>>()?;
        let mut args: Vec<raw::RedisModuleCommandArg> = words
            .iter()
            .map(|(arg, kind)| {
                let mut a: raw::RedisModuleCommandArg = std::mem::zeroed();
                a.name = arg.as_ptr();
                a.type_ = arg_type(kind);
                a.key_spec_index = if *kind == "key" { 0 } else { -1 };
                a
            })
            .collect();
        args.push(std::mem::zeroed());

        let summary = cstr(command.summary)?;
        let complexity = cstr(command.complexity)?;
        let since = cstr(command.since)?;
        let info = raw::RedisModuleCommandInfo {
            version: &COMMAND_INFO_VERSION,
            summary: summary.as_ptr(),
            complexity: complexity.as_ptr(),
            since: since.as_ptr(),
            history: ptr::null_mut(),
            tips: ptr::null(),
            arity: command.arity,
            key_specs: specs.as_mut_ptr(),
            args: args.as_mut_ptr(),
        };
        // Redis copies what it keeps.
        if f(raw::RedisModule_SetCommandInfo)(handle, &info) != raw::REDISMODULE_OK as c_int {
            return Err(format!("cannot set the command info of {}", command.name));
        }

        // ACL categories beyond @write and @fast, where the server lets a
        // module set them (Redis 7.2, Valkey 7.2 and later).
        if let Some(set_categories) = raw::RedisModule_SetCommandACLCategories {
            let category = cstr(command.acl_category)?;
            if set_categories(handle, category.as_ptr()) != raw::REDISMODULE_OK as c_int {
                return Err(format!("cannot set the ACL categories of {}", command.name));
            }
        }
    }
    Ok(())
}

fn init(ctx: &Context, _args: &[RedisString]) -> Status {
    if let Some(function) = missing_api() {
        ctx.log_warning(&format!(
            "the goblin module needs the module API of Redis 7.0 or later (this server lacks {function})"
        ));
        return Status::Err;
    }
    // Keys are signalled as modified (WATCH, client-side caching) only by
    // the calls that change them, not on every key opened for writing.
    unsafe {
        f(raw::RedisModule_SetModuleOptions)(
            ctx.ctx,
            raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED as c_int,
        );
    }
    for command in goblin_family::COMMANDS {
        if let Err(e) = register(ctx.ctx, command) {
            ctx.log_warning(&format!("goblin module: {e}"));
            return Status::Err;
        }
    }
    Status::Ok
}

/// The module allocates through Redis (RedisModule_Alloc), so that its
/// memory counts in INFO memory and against maxmemory. The unit tests run
/// outside Redis, on the system allocator.
#[derive(Clone, Copy)]
pub struct Allocator;

#[cfg(not(test))]
use redis_module::alloc::RedisAlloc as Backend;
#[cfg(test)]
use std::alloc::System as Backend;

unsafe impl std::alloc::GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        unsafe { Backend.alloc(layout) }
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: std::alloc::Layout) {
        unsafe { Backend.dealloc(p, layout) }
    }
}

redis_module! {
    name: "goblin",
    version: 1,
    allocator: (Allocator, Allocator),
    data_types: [],
    init: init,
}
