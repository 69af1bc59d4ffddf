//! JavaScript scripts and libraries (`#!js`), on QuickJS through rquickjs.
//!
//! JavaScript is a second engine behind the machinery Lua uses: the script
//! cache, the function library registry, the flags, the checks and the
//! call of a command (`api::run_command`), busy and kill state
//! (`eval::tick`), replication of effects and persistence are the same
//! code for both; this file holds only what is the language's own.
//!
//! Each `Host` (the EVAL interpreter, the functions interpreter) makes a
//! [`JsEngine`] the first time it meets JavaScript: one QuickJS runtime
//! with one context, whose memory is counted by its own allocator and
//! bounded by `js-memory-limit`, whose stack is bounded, and whose
//! interrupt handler is the instruction hook of Lua's side.
//!
//! # The language as scripts see it
//!
//! - An EVAL script's body is the body of a strict-mode function of
//!   `KEYS`, `ARGV`, `KEYS_BYTES` and `ARGV_BYTES`: `return` gives its
//!   reply. A library's body is run once by FUNCTION LOAD; it calls
//!   `redis.registerFunction`, whose callbacks get `(keys, args,
//!   keysBytes, argsBytes)`.
//! - The sandbox: the context has the language's standard objects only (no
//!   file, network, timer, module loader or host object), and every object
//!   reachable from the global object (prototypes, constructors, `redis`)
//!   is frozen before the first script, so that nothing a script does
//!   survives it: a script cannot define globals or change a builtin.
//!   Promise jobs a script queued run before its reply, inside its run.
//! - Replies both ways are documented in docs/SCRIPTING.md.

use super::api::{run_command, CommandOutcome};
use super::eval::{Invocation, ScriptFlags};
use super::host::Host;
use crate::command::Ctx;
use crate::protocol::ReplyWriter;
use crate::Error;
use rquickjs::function::Rest;
use rquickjs::{
    qjs, Array, BigInt, Context, Ctx as JsCtx, Function, Object, Persistent, Runtime, TypedArray,
    Value,
};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The C stack a JavaScript run may use. Scripts run with
/// `lua::SCRIPT_STACK` (16 MiB) free; QuickJS raises a RangeError
/// ("Maximum call stack size exceeded") past this bound, leaving the rest
/// for the commands a script calls.
const JS_STACK: usize = 8 << 20;

/// How deep a reply may nest, either way (a cyclic array returned by a
/// script would otherwise never end).
const MAX_DEPTH: usize = 1000;

/// A compiled script or registered function of a [`JsEngine`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JsRef(u32);

/// What the native functions and the interrupt handler share with the
/// engine: the host of the running script.
struct Shared {
    host: Cell<*mut Host>,
    /// FUNCTION LOAD running a library's top level: its deadline and the
    /// functions it registered.
    loading: RefCell<Option<Loading>>,
    /// Compiling a script (the compiler does not run code, but a bound
    /// keeps a pathological source from holding the server).
    compile_deadline: Cell<Option<Instant>>,
    /// The interrupt handler stopped the script for SCRIPT KILL.
    killed: Cell<bool>,
    /// The prelude's `make_error`, set for the length of a run only (the
    /// runtime owns this struct, and a value kept here past the runtime
    /// would outlive it).
    make_error: RefCell<Option<Persistent<Function<'static>>>>,
}

/// A function a library's top level registered: name, callback, flags,
/// description.
type Registered = (
    String,
    Persistent<Function<'static>>,
    ScriptFlags,
    Option<Vec<u8>>,
);

struct Loading {
    deadline: Instant,
    functions: Vec<Registered>,
    error: Option<String>,
}

/// One QuickJS runtime and context, and the functions compiled in it.
pub struct JsEngine {
    // Declared before the runtime: persistent values must go first.
    functions: HashMap<u32, Persistent<Function<'static>>>,
    /// Per function: whether it wants the byte forms of its arguments.
    wants_bytes: HashMap<u32, bool>,
    prelude_fns: Option<PreludeFns>,
    next: u32,
    shared: Rc<Shared>,
    context: Context,
    runtime: Runtime,
    memory: Arc<Budget>,
}

/// JavaScript functions of the prelude that Rust calls.
struct PreludeFns {
    /// `(message) => new ReplyError(message)`.
    make_error: Persistent<Function<'static>>,
    /// The kind and text of a thrown value: `[0 other | 1 {err} | 2
    /// ReplyError, text]`.
    describe: Persistent<Function<'static>>,
    /// The Function constructor, which compiles a body (it cannot be
    /// broken out of, unlike a wrapper written around the source).
    compile: Persistent<Function<'static>>,
}

/// What a runtime's allocator keeps: the bytes it holds, its bound, and
/// whether it refused an allocation since the last look.
#[derive(Default)]
struct Budget {
    used: AtomicU64,
    limit: AtomicU64,
    refused: std::sync::atomic::AtomicBool,
}

impl Budget {
    fn admit(&self, size: usize) -> bool {
        let limit = self.limit.load(Ordering::Relaxed);
        if limit != 0 && self.used.load(Ordering::Relaxed) + size as u64 > limit {
            self.refused.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }
}

/// The runtime's allocator: the C library's, as Lua's (its memory stays
/// out of the server's allocator figures, as in Redis), counting what it
/// holds and refusing what would pass js-memory-limit. The bound is kept
/// here rather than with QuickJS's own so that a refusal is known for
/// what it is: QuickJS, out of memory, may fail to make its error object
/// and throw null.
struct CountingAlloc(Arc<Budget>);

// SAFETY: every pointer handed out comes from malloc and is given back to
// free/realloc; usable_size reads the C library's own figure.
unsafe impl rquickjs::allocator::Allocator for CountingAlloc {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !self.0.admit(size) {
            return std::ptr::null_mut();
        }
        // SAFETY: malloc has no preconditions.
        let p = unsafe { libc::malloc(size.max(1)) } as *mut u8;
        if !p.is_null() {
            // SAFETY: p is a live block.
            self.0
                .used
                .fetch_add(unsafe { Self::usable_size(p) } as u64, Ordering::Relaxed);
        }
        p
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        if !self.0.admit(count.saturating_mul(size)) {
            return std::ptr::null_mut();
        }
        // SAFETY: calloc checks the product.
        let p = unsafe { libc::calloc(count.max(1), size.max(1)) } as *mut u8;
        if !p.is_null() {
            // SAFETY: p is a live block.
            self.0
                .used
                .fetch_add(unsafe { Self::usable_size(p) } as u64, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        if ptr.is_null() {
            return;
        }
        self.0
            .used
            .fetch_sub(Self::usable_size(ptr) as u64, Ordering::Relaxed);
        libc::free(ptr.cast());
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        let old = if ptr.is_null() {
            0
        } else {
            Self::usable_size(ptr)
        };
        if new_size > old && !self.0.admit(new_size - old) {
            return std::ptr::null_mut();
        }
        let p = libc::realloc(ptr.cast(), new_size.max(1)) as *mut u8;
        if !p.is_null() {
            self.0.used.fetch_sub(old as u64, Ordering::Relaxed);
            self.0
                .used
                .fetch_add(Self::usable_size(p) as u64, Ordering::Relaxed);
        }
        p
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        libc::malloc_usable_size(ptr.cast())
    }
}

/// The prelude: builds `redis` over the native functions and freezes
/// every object reachable from the global object. Its value is the
/// functions Rust keeps (`PreludeFns`).
const PRELUDE: &str = r#"(function (native, version, versionNum) {
"use strict";
class ReplyError extends Error {
  constructor(message) { super(message); }
}
Object.defineProperty(ReplyError.prototype, "name", { value: "ReplyError" });
const call = native.call;
const redis = {
  call: call.bind(null, 0),
  pcall: call.bind(null, 1),
  callBytes: call.bind(null, 2),
  pcallBytes: call.bind(null, 3),
  errorReply(message) {
    if (typeof message !== "string") throw new TypeError("wrong number or type of arguments");
    return { err: message.startsWith("-") ? message.slice(1) : message };
  },
  statusReply(message) {
    if (typeof message !== "string") throw new TypeError("wrong number or type of arguments");
    return { ok: message };
  },
  log: native.log,
  setResp: native.setResp,
  sha1hex: native.sha1hex,
  registerFunction(name, callback, options) {
    let description;
    let flags = [];
    if (arguments.length === 1 && name !== null && typeof name === "object") {
      options = name;
      name = options.function_name;
      callback = options.callback;
      description = options.description;
      flags = options.flags === undefined ? [] : options.flags;
    } else if (options !== undefined) {
      if (options === null || typeof options !== "object") throw new TypeError("the options of redis.registerFunction must be an object");
      flags = options.flags === undefined ? [] : options.flags;
      description = options.description;
    }
    if (typeof name !== "string") throw new TypeError("redis.registerFunction must get a function name");
    if (typeof callback !== "function") throw new TypeError("redis.registerFunction must get a callback function");
    if (!Array.isArray(flags)) throw new TypeError("flags given to redis.registerFunction must be an array");
    if (description !== undefined && typeof description !== "string") throw new TypeError("description given to redis.registerFunction must be a string");
    native.register(name, callback, flags.map(String), description);
  },
  ReplyError,
  REDIS_VERSION: version,
  REDIS_VERSION_NUM: versionNum,
  LOG_DEBUG: 0, LOG_VERBOSE: 1, LOG_NOTICE: 2, LOG_WARNING: 3,
};
Object.defineProperty(globalThis, "redis", { value: redis, enumerable: true });
const F = Function;
const seen = new Set();
const harden = (o) => {
  if (o === null || (typeof o !== "object" && typeof o !== "function") || seen.has(o)) return;
  seen.add(o);
  Object.freeze(o);
  harden(Object.getPrototypeOf(o));
  for (const k of Reflect.ownKeys(o)) {
    const d = Object.getOwnPropertyDescriptor(o, k);
    if ("value" in d) harden(d.value); else { harden(d.get); harden(d.set); }
  }
};
const hidden = [
  function* () {}, async function () {}, async function* () {},
  (function* () {})(), (async function* () {})(),
  [][Symbol.iterator](), new Map()[Symbol.iterator](), new Set()[Symbol.iterator](),
  ""[Symbol.iterator](), /x/[Symbol.matchAll]("x"), Promise.resolve(),
];
for (const o of hidden) harden(o);
harden(globalThis);
return [
  (m) => new ReplyError(m),
  (e) => {
    if (e instanceof ReplyError) return [2, e.message];
    if (e !== null && typeof e === "object" && typeof e.err === "string") return [1, e.err];
    return [0, String(e)];
  },
  F,
];
})"#;

impl JsEngine {
    /// A runtime with the sandboxed context and `redis` in it.
    pub fn new() -> Result<JsEngine, Error> {
        let memory = Arc::new(Budget::default());
        let runtime = Runtime::new_with_alloc(CountingAlloc(memory.clone()))
            .map_err(|e| Error::err(format_args!("JavaScript runtime: {e}")))?;
        runtime.set_max_stack_size(JS_STACK);
        let context = Context::full(&runtime)
            .map_err(|e| Error::err(format_args!("JavaScript context: {e}")))?;
        let shared = Rc::new(Shared {
            host: Cell::new(std::ptr::null_mut()),
            loading: RefCell::new(None),
            compile_deadline: Cell::new(None),
            killed: Cell::new(false),
            make_error: RefCell::new(None),
        });
        let handler_shared = shared.clone();
        runtime.set_interrupt_handler(Some(Box::new(move || interrupt(&handler_shared))));
        let mut engine = JsEngine {
            functions: HashMap::new(),
            wants_bytes: HashMap::new(),
            prelude_fns: None,
            next: 0,
            shared,
            context,
            runtime,
            memory,
        };
        let prelude_fns = engine
            .context
            .with(|ctx| install(&ctx, &engine.shared))
            .map_err(|e| Error::err(format_args!("JavaScript prelude: {e}")))?;
        engine.prelude_fns = Some(prelude_fns);
        Ok(engine)
    }

    /// The bytes the runtime holds.
    pub fn memory(&self) -> u64 {
        self.memory.used.load(Ordering::Relaxed)
    }

    /// Whether an allocation was refused since the bound was last set.
    fn refused(&self) -> bool {
        self.memory.refused.load(Ordering::Relaxed)
    }

    /// Bounds the runtime's memory (0: no bound).
    fn set_limit(&self, limit: usize) {
        self.memory.limit.store(limit as u64, Ordering::Relaxed);
        self.memory.refused.store(false, Ordering::Relaxed);
    }

    /// A full collection.
    pub fn collect(&mut self) {
        self.runtime.run_gc();
    }

    fn prelude_fns(&self) -> &PreludeFns {
        self.prelude_fns.as_ref().expect("made by new")
    }

    /// Compiles an EVAL script's body (after its shebang line) as the body
    /// of a function of KEYS, ARGV, KEYS_BYTES and ARGV_BYTES.
    pub fn compile_script(&mut self, body: &[u8]) -> Result<JsRef, Error> {
        let compile = self.prelude_fns().compile.clone();
        let shared = self.shared.clone();
        shared.compile_deadline.set(Some(
            Instant::now() + std::time::Duration::from_millis(LOAD_TIMEOUT_MS),
        ));
        let mut source = b"\"use strict\";".to_vec();
        source.extend_from_slice(body);
        let source = String::from_utf8_lossy(&source).into_owned();
        let wants_bytes = source.contains("KEYS_BYTES") || source.contains("ARGV_BYTES");
        let r = super::lua::with_script_stack(|| {
            self.context.with(|ctx| {
                update_stack_top(&ctx);
                let compile = compile.restore(&ctx).map_err(|e| e.to_string())?;
                let f: rquickjs::Result<Function> =
                    compile.call(("KEYS", "ARGV", "KEYS_BYTES", "ARGV_BYTES", source));
                match f {
                    Ok(f) => Ok(Persistent::save(&ctx, f)),
                    Err(_) => Err(exception_text(&ctx)),
                }
            })
        });
        shared.compile_deadline.set(None);
        let f = r.map_err(|msg| {
            Error::concat(&[
                b"ERR Error compiling script (new function): ",
                msg.as_bytes(),
            ])
        })?;
        Ok(self.keep(f, wants_bytes))
    }

    fn keep(&mut self, f: Persistent<Function<'static>>, wants_bytes: bool) -> JsRef {
        self.next += 1;
        self.functions.insert(self.next, f);
        self.wants_bytes.insert(self.next, wants_bytes);
        JsRef(self.next)
    }

    /// Forgets a function (a library deleted or replaced).
    pub fn free(&mut self, f: JsRef) {
        self.functions.remove(&f.0);
        self.wants_bytes.remove(&f.0);
    }

    /// Runs a library's body (after its shebang line) for FUNCTION LOAD:
    /// the functions it registered, with their flags and descriptions.
    pub fn load_library(
        &mut self,
        body: &[u8],
        timeout_ms: u64,
        memory_limit: usize,
    ) -> Result<Vec<LoadedFunction>, Error> {
        let compile = self.prelude_fns().compile.clone();
        let shared = self.shared.clone();
        let deadline = Instant::now() + std::time::Duration::from_millis(timeout_ms);
        *shared.loading.borrow_mut() = Some(Loading {
            deadline,
            functions: Vec::new(),
            error: None,
        });
        let mut source = b"\"use strict\";".to_vec();
        source.extend_from_slice(body);
        let source = String::from_utf8_lossy(&source).into_owned();
        *shared.make_error.borrow_mut() = Some(self.prelude_fns().make_error.clone());
        self.set_limit(memory_limit);
        let r = super::lua::with_script_stack(|| {
            self.context.with(|ctx| {
                update_stack_top(&ctx);
                let compile = compile
                    .restore(&ctx)
                    .map_err(|e| format!("Error compiling function: {e}"))?;
                let f: Function = compile
                    .call((source,))
                    .map_err(|_| format!("Error compiling function: {}", exception_text(&ctx)))?;
                let r: rquickjs::Result<Value> = f.call(());
                let r = r.map_err(|_| {
                    let text = exception_text(&ctx);
                    if Instant::now() >= deadline {
                        "Error registering functions: FUNCTION LOAD timeout".to_string()
                    } else {
                        format!("Error registering functions: {text}")
                    }
                });
                // Promise jobs the body queued run now, under its deadline.
                while r.is_ok() && ctx.execute_pending_job() {}
                r.map(|_| ())
            })
        });
        let loading = shared.loading.borrow_mut().take().expect("set above");
        *shared.make_error.borrow_mut() = None;
        if let Err(msg) = r {
            return Err(Error::err(msg));
        }
        if let Some(msg) = loading.error {
            return Err(Error::err(format_args!(
                "Error registering functions: {msg}"
            )));
        }
        let mut out = Vec::new();
        for (name, f, flags, desc) in loading.functions {
            let wants = self.context.with(|ctx| {
                f.clone()
                    .restore(&ctx)
                    .ok()
                    .and_then(|f| f.into_value().into_object())
                    .and_then(|o| o.get::<_, i32>("length").ok())
                    .is_some_and(|n| n > 2)
            });
            out.push(LoadedFunction {
                name,
                flags,
                desc,
                target: self.keep(f, wants),
            });
        }
        Ok(out)
    }
}

/// A function a library registered.
pub struct LoadedFunction {
    pub name: String,
    pub flags: ScriptFlags,
    pub desc: Option<Vec<u8>>,
    pub target: JsRef,
}

/// FUNCTION LOAD's bound on a library's top level (as Lua's).
const LOAD_TIMEOUT_MS: u64 = super::functions::LOAD_TIMEOUT_MS;

/// QuickJS measures its stack from where the runtime last recorded its
/// top; scripts run on whatever thread (or stack segment) holds the
/// scripting mutex, so the top is recorded at each entry.
fn update_stack_top(ctx: &JsCtx) {
    // SAFETY: the context's runtime is alive and used by this thread only.
    unsafe { qjs::JS_UpdateStackTop(qjs::JS_GetRuntime(ctx.as_raw().as_ptr())) };
}

/// The interrupt handler (Lua's instruction hook): a running script ticks
/// (busy, kill); a library's top level and a compilation stop at their
/// deadline.
fn interrupt(shared: &Shared) -> bool {
    let hp = shared.host.get();
    if !hp.is_null() {
        // SAFETY: the host is set only while its script runs on this
        // thread, and no Rust reference to it is alive while JavaScript
        // runs.
        unsafe {
            if !(*hp).run.is_null() {
                if super::eval::tick(&mut *(*hp).run, (*hp).kind) {
                    shared.killed.set(true);
                    return true;
                }
                return false;
            }
        }
    }
    if let Some(loading) = shared.loading.borrow().as_ref() {
        return Instant::now() >= loading.deadline;
    }
    if let Some(deadline) = shared.compile_deadline.get() {
        return Instant::now() >= deadline;
    }
    false
}

/// The text of the pending exception, as `String(e)` reads it.
fn exception_text(ctx: &JsCtx) -> String {
    let e = ctx.catch();
    if let Some(o) = e.as_object() {
        let name: Option<String> = o.get("name").ok();
        let message: Option<String> = o.get("message").ok();
        if let Some(message) = message {
            return match name {
                Some(n) if !n.is_empty() => format!("{n}: {message}"),
                _ => message,
            };
        }
    }
    e.as_string()
        .and_then(|s| s.to_string().ok())
        .unwrap_or_else(|| "execution failure".to_string())
}

/// Defines the native functions and runs the prelude.
fn install<'js>(ctx: &JsCtx<'js>, shared: &Rc<Shared>) -> rquickjs::Result<PreludeFns> {
    let native = Object::new(ctx.clone())?;
    let s = shared.clone();
    native.set(
        "call",
        Function::new(
            ctx.clone(),
            move |ctx: JsCtx<'js>, args: Rest<Value<'js>>| native_call(&ctx, &s, args.0),
        )?,
    )?;
    native.set(
        "log",
        Function::new(
            ctx.clone(),
            move |ctx: JsCtx<'js>, args: Rest<Value<'js>>| native_log(&ctx, args.0),
        )?,
    )?;
    let s = shared.clone();
    native.set(
        "setResp",
        Function::new(
            ctx.clone(),
            move |ctx: JsCtx<'js>, args: Rest<Value<'js>>| native_set_resp(&ctx, &s, args.0),
        )?,
    )?;
    native.set(
        "sha1hex",
        Function::new(
            ctx.clone(),
            move |ctx: JsCtx<'js>, args: Rest<Value<'js>>| {
                if args.0.len() != 1 {
                    return Err(throw_type(&ctx, "wrong number of arguments"));
                }
                let bytes = arg_bytes(&args.0[0]).unwrap_or_default();
                let hex = super::sha1_hex(&bytes);
                rquickjs::String::from_str(ctx.clone(), std::str::from_utf8(&hex).unwrap_or(""))
            },
        )?,
    )?;
    let s = shared.clone();
    native.set(
        "register",
        Function::new(
            ctx.clone(),
            move |ctx: JsCtx<'js>,
                  name: String,
                  f: Function<'js>,
                  flags: Vec<String>,
                  desc: Option<String>| {
                native_register(&ctx, &s, name, f, flags, desc)
            },
        )?,
    )?;
    let prelude: Function = ctx.eval(PRELUDE)?;
    let version = crate::REDIS_VERSION;
    let num = super::api::redis_version_num();
    let prelude_fns: Array = prelude.call((native, version, num))?;
    let make_error: Function = prelude_fns.get(0)?;
    let describe: Function = prelude_fns.get(1)?;
    let compile: Function = prelude_fns.get(2)?;
    Ok(PreludeFns {
        make_error: Persistent::save(ctx, make_error),
        describe: Persistent::save(ctx, describe),
        compile: Persistent::save(ctx, compile),
    })
}

fn throw_type(ctx: &JsCtx, msg: &str) -> rquickjs::Error {
    rquickjs::Exception::throw_type(ctx, msg)
}

/// The bytes of a command argument: a string (as UTF-8), a number (as
/// Lua's "%.17g"), a BigInt (its digits), a Uint8Array (as it is).
fn arg_bytes(v: &Value) -> Option<Vec<u8>> {
    if let Some(s) = v.as_string() {
        return s.to_string().ok().map(String::into_bytes);
    }
    if let Some(n) = v.as_int() {
        return Some(itoa::Buffer::new().format(n).as_bytes().to_vec());
    }
    if let Some(n) = v.as_float() {
        let mut out = Vec::new();
        super::lua::format_number(n, &mut out);
        return Some(out);
    }
    if v.as_big_int().is_some() {
        // Its digits, whatever its size (to_i64 would wrap).
        let digits: rquickjs::Coerced<String> = v.get().ok()?;
        return Some(digits.0.into_bytes());
    }
    if let Ok(a) = TypedArray::<u8>::from_value(v.clone()) {
        // SAFETY: copied at once; no JavaScript runs meanwhile.
        return unsafe { a.as_bytes() }.map(|b| b.to_vec());
    }
    None
}

/// redis.call / pcall / callBytes / pcallBytes: `mode` bit 0 is pcall,
/// bit 1 the byte form of strings.
fn native_call<'js>(
    ctx: &JsCtx<'js>,
    shared: &Shared,
    args: Vec<Value<'js>>,
) -> rquickjs::Result<Value<'js>> {
    let mode = args.first().and_then(|v| v.as_int()).unwrap_or(0);
    let (pcall, bytes) = (mode & 1 != 0, mode & 2 != 0);
    let hp = shared.host.get();
    // SAFETY: set only while a script or library runs on this thread; no
    // other reference to the host is alive during a native call.
    let running = !hp.is_null() && unsafe { !(*hp).run.is_null() };
    let fail = |text: &[u8]| -> rquickjs::Result<Value<'js>> {
        let text = error_text(text);
        if pcall {
            let o = Object::new(ctx.clone())?;
            o.set("err", text)?;
            Ok(o.into_value())
        } else {
            Err(throw_reply_error(ctx, shared, &text))
        }
    };
    if !running {
        return Err(throw_reply_error(
            ctx,
            shared,
            "ERR redis.call/pcall can only be called inside a script invocation",
        ));
    }
    if args.len() < 2 {
        return fail(b"Please specify at least one argument for this redis lib call");
    }
    let mut owned = Vec::with_capacity(args.len() - 1);
    for v in &args[1..] {
        match arg_bytes(v) {
            Some(b) => owned.push(b),
            None => {
                return fail(b"JavaScript redis lib command arguments must be strings, numbers, BigInts or Uint8Arrays")
            }
        }
    }
    drop(args);
    let argv: Vec<&[u8]> = owned.iter().map(|a| a.as_slice()).collect();
    // SAFETY: as above.
    let host = unsafe { &mut *hp };
    // SAFETY: host.run is non-null (checked above).
    let outcome = unsafe { run_command(host, &argv) };
    drop(argv);
    drop(owned);
    match outcome {
        CommandOutcome::Rejected(err) => fail(err.as_bytes()),
        CommandOutcome::Failed => fail(b"-ERR internal error while running the command"),
        CommandOutcome::Reply { is_error } => {
            let buf = std::mem::take(&mut host.out.buf);
            let r = if is_error {
                let end = memchr::memchr(b'\r', &buf).unwrap_or(buf.len());
                let text = String::from_utf8_lossy(&buf[1..end]).into_owned();
                if pcall {
                    let o = Object::new(ctx.clone())?;
                    o.set("err", text)?;
                    Ok(o.into_value())
                } else {
                    Err(throw_reply_error(ctx, shared, &text))
                }
            } else {
                let mut pos = 0;
                parse_reply(ctx, &buf, &mut pos, bytes, 0)
            };
            let mut buf = buf;
            buf.clear();
            if buf.capacity() <= 1 << 16 {
                host.out.buf = buf;
            }
            r
        }
    }
}

/// An error's text as Redis's luaPushErrorBuff makes it: a text starting
/// with '-' carries its own code, any other gets "ERR"; line ends trimmed.
fn error_text(text: &[u8]) -> String {
    let text = String::from_utf8_lossy(text);
    let text = text.trim_matches(['\r', '\n']);
    match text.strip_prefix('-') {
        Some(rest) if rest.contains(' ') => rest.to_string(),
        Some(rest) => format!("ERR {rest}"),
        None => format!("ERR {text}"),
    }
}

fn throw_reply_error(ctx: &JsCtx, shared: &Shared, text: &str) -> rquickjs::Error {
    let maker = shared.make_error.borrow().clone();
    match maker {
        // A script out of memory here gets the memory error instead.
        Some(p) => match p.restore(ctx).and_then(|f| f.call::<_, Value>((text,))) {
            Ok(v) => ctx.throw(v),
            Err(e) => e,
        },
        None => rquickjs::Exception::throw_internal(ctx, text),
    }
}

fn native_log<'js>(ctx: &JsCtx<'js>, args: Vec<Value<'js>>) -> rquickjs::Result<()> {
    if args.len() < 2 {
        return Err(throw_type(
            ctx,
            "redis.log() requires two arguments or more.",
        ));
    }
    let Some(level) = args[0].as_number() else {
        return Err(throw_type(
            ctx,
            "First argument must be a number (log level).",
        ));
    };
    if !(0.0..=3.0).contains(&level) {
        return Err(throw_type(ctx, "Invalid debug level."));
    }
    let mut msg = String::new();
    for (i, v) in args[1..].iter().enumerate() {
        if i > 0 {
            msg.push(' ');
        }
        match arg_bytes(v) {
            Some(b) => msg.push_str(&String::from_utf8_lossy(&b)),
            None => msg.push('?'),
        }
    }
    super::log(level as u8, &msg);
    Ok(())
}

fn native_set_resp<'js>(
    ctx: &JsCtx<'js>,
    shared: &Shared,
    args: Vec<Value<'js>>,
) -> rquickjs::Result<()> {
    if args.len() != 1 {
        return Err(throw_type(ctx, "redis.setResp() requires one argument."));
    }
    let resp = args[0].as_number().unwrap_or(0.0);
    if resp != 2.0 && resp != 3.0 {
        return Err(throw_type(ctx, "RESP version must be 2 or 3."));
    }
    let hp = shared.host.get();
    if hp.is_null() {
        return Ok(());
    }
    // SAFETY: as in native_call.
    let host = unsafe { &mut *hp };
    host.client.resp = resp as u8;
    host.out.set_resp(resp as u8);
    Ok(())
}

fn native_register<'js>(
    ctx: &JsCtx<'js>,
    shared: &Shared,
    name: String,
    f: Function<'js>,
    flags: Vec<String>,
    desc: Option<String>,
) -> rquickjs::Result<()> {
    let mut loading = shared.loading.borrow_mut();
    let Some(loading) = loading.as_mut() else {
        return Err(throw_type(
            ctx,
            "redis.registerFunction can only be called on FUNCTION LOAD command",
        ));
    };
    let mut bits = 0;
    for flag in &flags {
        match ScriptFlags::NAMES
            .iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(flag))
        {
            Some((b, _)) => bits |= b,
            None => return Err(throw_type(ctx, "unknown flag given")),
        }
    }
    if !super::functions::valid_name(name.as_bytes()) {
        return Err(throw_type(ctx, super::functions::NAME_ERROR));
    }
    if loading.functions.iter().any(|g| g.0 == name) {
        return Err(throw_type(ctx, "Function already exists in the library"));
    }
    loading.functions.push((
        name,
        Persistent::save(ctx, f),
        ScriptFlags(bits),
        desc.map(String::into_bytes),
    ));
    Ok(())
}

/// A reply from the engine (complete and well formed) as a JavaScript
/// value; `bytes`: strings as Uint8Array.
fn parse_reply<'js>(
    ctx: &JsCtx<'js>,
    buf: &[u8],
    pos: &mut usize,
    bytes: bool,
    depth: usize,
) -> rquickjs::Result<Value<'js>> {
    let bad = || rquickjs::Exception::throw_internal(ctx, "malformed reply");
    let kind = *buf.get(*pos).ok_or_else(bad)?;
    *pos += 1;
    let start = *pos;
    let end = start + memchr::memchr(b'\r', buf.get(start..).ok_or_else(bad)?).ok_or_else(bad)?;
    *pos = end + 2;
    let text = &buf[start..end];
    let int = || crate::util::number::parse_i64(text).unwrap_or(0);
    let string = |b: &[u8]| -> rquickjs::Result<Value<'js>> {
        if bytes {
            Ok(TypedArray::<u8>::new(ctx.clone(), b.to_vec())?.into_value())
        } else {
            Ok(rquickjs::String::from_str(ctx.clone(), &String::from_utf8_lossy(b))?.into_value())
        }
    };
    let tagged = |key: &str, v: Value<'js>| -> rquickjs::Result<Value<'js>> {
        let o = Object::new(ctx.clone())?;
        o.set(key, v)?;
        Ok(o.into_value())
    };
    if depth > MAX_DEPTH {
        return Err(bad());
    }
    match kind {
        b':' => Ok(number(ctx, int())?),
        b'+' => tagged("ok", string(text)?),
        b'-' => tagged("err", string(text)?),
        b'$' | b'=' => {
            let n = int();
            if n < 0 {
                return Ok(Value::new_null(ctx.clone()));
            }
            let body = buf.get(*pos..*pos + n as usize).ok_or_else(bad)?;
            *pos += n as usize + 2;
            if kind == b'=' && body.len() >= 4 {
                let o = Object::new(ctx.clone())?;
                o.set("format", String::from_utf8_lossy(&body[..3]).into_owned())?;
                o.set("string", string(&body[4..])?)?;
                return tagged("verbatim_string", o.into_value());
            }
            string(body)
        }
        b'_' => Ok(Value::new_null(ctx.clone())),
        b'#' => Ok(Value::new_bool(ctx.clone(), text == b"t")),
        b',' => {
            let d: f64 = std::str::from_utf8(text)
                .ok()
                .and_then(|t| match t {
                    "inf" => Some(f64::INFINITY),
                    "-inf" => Some(f64::NEG_INFINITY),
                    t => t.parse().ok(),
                })
                .unwrap_or(f64::NAN);
            tagged("double", Value::new_float(ctx.clone(), d))
        }
        b'(' => tagged("big_number", string(text)?),
        b'*' | b'~' | b'>' => {
            let n = int();
            if n < 0 {
                return Ok(Value::new_null(ctx.clone()));
            }
            let a = Array::new(ctx.clone())?;
            for i in 0..n as usize {
                a.set(i, parse_reply(ctx, buf, pos, bytes, depth + 1)?)?;
            }
            if kind == b'~' {
                return tagged("set", a.into_value());
            }
            Ok(a.into_value())
        }
        b'%' => {
            let o = Object::new(ctx.clone())?;
            for _ in 0..int().max(0) {
                let k = parse_reply(ctx, buf, pos, false, depth + 1)?;
                let v = parse_reply(ctx, buf, pos, bytes, depth + 1)?;
                let key = k
                    .as_string()
                    .and_then(|s| s.to_string().ok())
                    .or_else(|| k.as_number().map(|n| n.to_string()))
                    .unwrap_or_default();
                o.set(key, v)?;
            }
            tagged("map", o.into_value())
        }
        b'|' => {
            // Attributes are skipped: the reply that follows is the value.
            for _ in 0..int().max(0) * 2 {
                parse_reply(ctx, buf, pos, bytes, depth + 1)?;
            }
            parse_reply(ctx, buf, pos, bytes, depth + 1)
        }
        _ => Err(bad()),
    }
}

/// An integer reply: a number within 2^53, a BigInt beyond.
fn number<'js>(ctx: &JsCtx<'js>, n: i64) -> rquickjs::Result<Value<'js>> {
    const SAFE: i64 = (1 << 53) - 1;
    if (-SAFE..=SAFE).contains(&n) {
        if let Ok(i) = i32::try_from(n) {
            return Ok(Value::new_int(ctx.clone(), i));
        }
        return Ok(Value::new_float(ctx.clone(), n as f64));
    }
    Ok(BigInt::from_i64(ctx.clone(), n)?.into_value())
}

/// A script's value as a reply (luaReplyToRedisReply's rules, in
/// JavaScript's terms; see docs/SCRIPTING.md). `budget` bounds the
/// reply's size: a Proxy posing as an endless array cannot make it grow
/// without end.
fn write_value(
    v: &Value,
    out: &mut ReplyWriter,
    resp: u8,
    depth: usize,
    budget: &mut usize,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err("ERR reached JavaScript reply nesting limit".into());
    }
    let take = |budget: &mut usize, n: usize| -> Result<(), String> {
        *budget = budget
            .checked_sub(n)
            .ok_or_else(|| "ERR JavaScript reply too large".to_string())?;
        Ok(())
    };
    take(budget, 16)?;
    if let Some(s) = v.as_string() {
        let s = s.to_string().map_err(|e| format!("ERR {e}"))?;
        take(budget, s.len())?;
        out.bulk(s.as_bytes());
        return Ok(());
    }
    if let Some(b) = v.as_bool() {
        if resp == 2 {
            if b {
                out.int(1);
            } else {
                out.null();
            }
        } else {
            out.bool(b);
        }
        return Ok(());
    }
    if let Some(n) = v.as_int() {
        out.int(n as i64);
        return Ok(());
    }
    if let Some(n) = v.as_float() {
        out.int(n as i64);
        return Ok(());
    }
    if v.as_big_int().is_some() {
        let digits: rquickjs::Coerced<String> = v.get().map_err(|e| format!("ERR {e}"))?;
        match digits.0.parse::<i64>() {
            Ok(n) => out.int(n),
            Err(_) => out.error("ERR BigInt out of the range of a Redis integer"),
        }
        return Ok(());
    }
    if v.is_null() || v.is_undefined() {
        out.null();
        return Ok(());
    }
    if let Ok(a) = TypedArray::<u8>::from_value(v.clone()) {
        // SAFETY: written at once; no JavaScript runs meanwhile.
        let b = unsafe { a.as_bytes() }.unwrap_or(&[]);
        take(budget, b.len())?;
        out.bulk(b);
        return Ok(());
    }
    if let Some(a) = v.as_array() {
        // Lua's rule: the array ends at its first hole (undefined).
        let d = out.begin_deferred();
        let mut n = 0;
        loop {
            let item: Value = a.get(n).map_err(|e| format!("ERR {e}"))?;
            if item.is_undefined() {
                break;
            }
            write_value(&item, out, resp, depth + 1, budget)?;
            n += 1;
        }
        out.end_array(d, n);
        return Ok(());
    }
    let Some(o) = v.as_object() else {
        out.null();
        return Ok(());
    };
    let field = |k: &str| -> Result<Value, String> { o.get(k).map_err(|e| format!("ERR {e}")) };
    let err = field("err")?;
    if let Some(s) = err.as_string() {
        let s = s.to_string().unwrap_or_default();
        super::convert::write_error(out, s.as_bytes(), false);
        return Ok(());
    }
    let ok = field("ok")?;
    if let Some(s) = ok.as_string() {
        let s = s.to_string().unwrap_or_default();
        // Status replies are one line.
        let s: String = s
            .chars()
            .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
            .collect();
        out.simple(s.as_bytes());
        return Ok(());
    }
    let double = field("double")?;
    if let Some(d) = double.as_number() {
        out.double(d);
        return Ok(());
    }
    let big = field("big_number")?;
    if let Some(s) = big.as_string() {
        let s = s.to_string().unwrap_or_default();
        out.big_number(&s);
        return Ok(());
    }
    let map = field("map")?;
    if let Some(m) = map.as_object() {
        let keys: Vec<String> = m
            .keys::<String>()
            .collect::<rquickjs::Result<_>>()
            .map_err(|e| format!("ERR {e}"))?;
        out.map(keys.len());
        for k in keys {
            take(budget, k.len() + 16)?;
            out.bulk(k.as_bytes());
            let item: Value = m.get(&k).map_err(|e| format!("ERR {e}"))?;
            write_value(&item, out, resp, depth + 1, budget)?;
        }
        return Ok(());
    }
    let set = field("set")?;
    if let Some(a) = set.as_array() {
        let d = out.begin_deferred();
        let mut n = 0;
        loop {
            let item: Value = a.get(n).map_err(|e| format!("ERR {e}"))?;
            if item.is_undefined() {
                break;
            }
            write_value(&item, out, resp, depth + 1, budget)?;
            n += 1;
        }
        out.end_set(d, n);
        return Ok(());
    }
    // Any other object: an empty array, as a Lua table without a sequence.
    out.array(0);
    Ok(())
}

/// Runs a JavaScript script or function for `eval::run_here`, with the
/// run context already installed in the host, and writes its reply.
///
/// # Safety
/// As `eval::run`'s.
pub(crate) unsafe fn run(ctx: &mut Ctx, hp: *mut Host, inv: &Invocation, f: JsRef) {
    let limit = super::js_memory_limit(ctx.engine.config());
    let Some(engine) = (*hp).js.as_deref_mut() else {
        ctx.out.error("ERR JavaScript engine unavailable");
        return;
    };
    let engine: *mut JsEngine = engine;
    let Some(func) = (*engine).functions.get(&f.0).cloned() else {
        ctx.out.error("ERR JavaScript function unavailable");
        return;
    };
    let wants_bytes = (*engine).wants_bytes.get(&f.0).copied().unwrap_or(false);
    let shared = (*engine).shared.clone();
    shared.host.set(hp);
    shared.killed.set(false);
    *shared.make_error.borrow_mut() = Some((*engine).prelude_fns().make_error.clone());
    (*engine).set_limit(limit);
    let describe = (*engine).prelude_fns().describe.clone();
    let name = inv.name;
    let budget = limit;
    let out: *mut ReplyWriter = ctx.out;
    (*engine).context.with(|jctx| {
        update_stack_top(&jctx);
        let result = (|| -> Result<Value, ()> {
            let func = func.restore(&jctx).map_err(|_| ())?;
            let strings = |items: &[&[u8]]| -> rquickjs::Result<Array> {
                let a = Array::new(jctx.clone())?;
                for (i, s) in items.iter().enumerate() {
                    a.set(
                        i,
                        rquickjs::String::from_str(jctx.clone(), &String::from_utf8_lossy(s))?,
                    )?;
                }
                Ok(a)
            };
            let byte_arrays = |items: &[&[u8]]| -> rquickjs::Result<Value> {
                if !wants_bytes {
                    return Ok(Value::new_undefined(jctx.clone()));
                }
                let a = Array::new(jctx.clone())?;
                for (i, s) in items.iter().enumerate() {
                    a.set(i, TypedArray::<u8>::new(jctx.clone(), s.to_vec())?)?;
                }
                Ok(a.into_value())
            };
            let args = (|| -> rquickjs::Result<_> {
                Ok((
                    strings(inv.keys)?,
                    strings(inv.args)?,
                    byte_arrays(inv.keys)?,
                    byte_arrays(inv.args)?,
                ))
            })()
            .map_err(|_| ())?;
            let v: Value = func.call(args).map_err(|_| ())?;
            // Jobs the script queued (promise reactions) run within it.
            while jctx.execute_pending_job() {}
            Ok(v)
        })();
        let out = &mut *out;
        match result {
            Ok(v) => {
                let mut budget = budget;
                let mark = out.len();
                if let Err(e) = write_value(&v, out, (*hp).client.resp, 0, &mut budget) {
                    out.truncate(mark);
                    out.error(e);
                }
            }
            Err(()) => {
                if shared.killed.get() {
                    let _ = jctx.catch();
                    out.error("ERR Script killed by user with SCRIPT KILL...");
                    return;
                }
                let e = jctx.catch();
                if (*engine).refused() {
                    let mut text = format!("ERR Error running script {name}, ").into_bytes();
                    text.extend_from_slice(b"InternalError: out of memory");
                    out.error(&text);
                    return;
                }
                let described: Option<(i32, String)> = describe
                    .restore(&jctx)
                    .and_then(|d| d.call::<_, Array>((e.clone(),)))
                    .and_then(|a| Ok((a.get::<i32>(0)?, a.get::<String>(1)?)))
                    .ok();
                match described {
                    Some((2, text)) => super::convert::write_error(out, text.as_bytes(), true),
                    Some((1, text)) => super::convert::write_error(out, text.as_bytes(), false),
                    other => {
                        let _ = jctx.catch();
                        let msg = match other {
                            Some((_, text)) => text,
                            None if e.is_null() => "InternalError: out of memory".to_string(),
                            None => "execution failure".to_string(),
                        };
                        let mut text = format!("ERR Error running script {name}, ").into_bytes();
                        text.extend_from_slice(crate::error::printf_s(msg.as_bytes(), 100));
                        while let Some(b'\r' | b'\n') = text.last() {
                            text.pop();
                        }
                        out.error(&text);
                    }
                }
            }
        }
    });
    // What the script left over the limit (a failed allocation spree)
    // goes now, not with the next script.
    if (*engine).memory() as usize > limit / 2 {
        (*engine).collect();
    }
    *shared.make_error.borrow_mut() = None;
    shared.host.set(std::ptr::null_mut());
}
