//! Lua scripting, as Redis 7.0 runs it: EVAL scripts and FUNCTION
//! libraries on Lua 5.1 (src/script_lua.c, eval.c, function_lua.c,
//! functions.c and script.c in Redis).
//!
//! The main types:
//! - [`Scripting`]: the engine's scripting state. Two Lua interpreters (one
//!   for EVAL, reset by SCRIPT FLUSH; one for FUNCTION libraries) behind one
//!   mutex with the function libraries; the EVAL script cache; a pool of
//!   further EVAL interpreters for keyed scripts; and the [`RunState`] of
//!   the script in execution, which other clients read without the mutex
//!   (BUSY replies, SCRIPT KILL, FUNCTION STATS).
//! - `Host` (in [`host`]): one interpreter with the data its C functions
//!   reach: the running script's context, the script's own client state and
//!   reply buffer.
//!
//! Where things live:
//! - [`sandbox`]: building an interpreter: the allowed globals, read-only
//!   tables, the error handler.
//! - [`api`]: the `redis` table (`redis.call`, `redis.pcall`, ...), the
//!   sandbox's wrappers of Lua builtins, `math.random`.
//! - [`convert`]: replies to Lua values and Lua values to replies.
//! - [`eval`] and [`functions`]: the two ways to run code.
//! - [`keyed`]: which EVAL scripts touch only the keys they declare.
//! - [`libs`]: cjson, cmsgpack, bit and struct, as Redis bundles them.
//! - [`js`]: JavaScript (`#!js` scripts and libraries), a second engine
//!   in each host behind the same cache, registry, checks and run state.
//!
//! # Atomicity
//!
//! A script may touch any key, so EVAL, EVALSHA, FCALL and their _RO forms
//! hold every shard (`flag::ALL_SHARDS`) while they run: like in Redis, no
//! other command interleaves with a script. The exception is an EVAL
//! script that [`keyed`] shows to touch only its KEYS and to run in bounded
//! time: it holds only the shards of its KEYS and runs on its worker
//! thread's own interpreter (or one from a pool), so such scripts run in
//! parallel on different shards (each still alone against its keys). Commands a script runs go through
//! `Engine::call` with the script's held shards, its own client (its
//! database, its RESP version) and `in_script` set.
//!
//! # Busy scripts
//!
//! Once a script has run longer than `busy-reply-threshold`, the Lua
//! instruction hook marks it timed out: clients whose commands are not
//! flagged allow-busy get a BUSY error instead of waiting for its locks
//! (the dispatcher checks [`Scripting::busy_error`], and lock waits poll
//! it). SCRIPT KILL / FUNCTION KILL set a flag the hook acts on.

// The unsafe functions of this module all share one contract, stated once
// here rather than on each: they take a valid Lua state that the calling
// thread owns (under the scripting mutex), and a stack with the values
// they document.
#![allow(clippy::missing_safety_doc)]

pub mod api;
pub mod convert;
pub mod eval;
pub mod functions;
pub mod host;
pub mod js;
pub mod keyed;
pub mod libs;
pub mod lua;
pub mod patterns;
pub mod rand;
pub mod sandbox;

use crate::client::ClientRegistry;
use crate::Error;
use eval::{EvalVm, Script};
use parking_lot::{Mutex, MutexGuard, RwLock};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use eval::ScriptFlags;

/// Redis's shared.slowevalerr.
pub const BUSY_EVAL: Error = Error::constant(
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
);
/// Redis's shared.slowscripterr.
pub const BUSY_FUNCTION: Error = Error::constant(
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.",
);

/// The interpreters and everything that changes only under the mutex.
pub struct Vms {
    pub eval: EvalVm,
    pub functions: functions::FunctionVm,
}

/// What other clients may learn about the script in execution, without
/// waiting for it.
#[derive(Default)]
pub struct RunState {
    running: AtomicBool,
    /// Past busy-reply-threshold: others get BUSY.
    timed_out: AtomicBool,
    /// SCRIPT KILL / FUNCTION KILL asked the script to stop.
    killed: AtomicBool,
    /// The script executed a write command (then it cannot be killed).
    wrote: AtomicBool,
    is_eval: AtomicBool,
    /// FUNCTION STATS: the function's name and command line, its start.
    info: Mutex<Option<RunInfo>>,
}

#[derive(Clone)]
pub struct RunInfo {
    pub name: String,
    pub argv: Vec<Vec<u8>>,
    pub start: Instant,
}

/// Figures INFO reads without taking the scripting mutex.
#[derive(Default)]
pub struct ScriptingStats {
    /// The main EVAL interpreter's memory.
    pub eval_vm_memory: AtomicU64,
    pub functions_vm_memory: AtomicU64,
    pub cached_scripts: AtomicU64,
    pub cached_scripts_memory: AtomicU64,
    pub functions: AtomicU64,
    pub libraries: AtomicU64,
    pub functions_memory: AtomicU64,
    /// The JavaScript part of `libraries` and `functions`.
    pub js_libraries: AtomicU64,
    pub js_functions: AtomicU64,
}

/// The EVAL script cache: SHA → script. Looked up on every EVALSHA, hence
/// foldhash (seeded per process).
type ScriptCache = HashMap<[u8; 40], Arc<Script>, foldhash::fast::RandomState>;

pub struct Scripting {
    vms: Mutex<Vms>,
    /// Shared by the main EVAL interpreter and the pool; written by EVAL
    /// of a new script, SCRIPT LOAD and SCRIPT FLUSH.
    scripts: RwLock<ScriptCache>,
    /// Idle EVAL interpreters for keyed scripts, a slot per thread (see
    /// `take_vm`).
    slots: Box<[Slot]>,
    /// Bumped by SCRIPT FLUSH: pooled interpreters from before are dropped.
    generation: AtomicU64,
    /// The memory figures of every EVAL interpreter alive, pooled or
    /// main (`Host::figure`); an entry whose interpreter is gone is
    /// dropped when next read.
    eval_figures: Mutex<Vec<Arc<AtomicU64>>>,
    /// Bumped by collectgarbage("collect"): an interpreter whose own
    /// epoch is older is collected after its next script.
    gc_epoch: AtomicU64,
    pub run: RunState,
    pub stats: ScriptingStats,
    /// DEBUG SET-DISABLE-DENY-SCRIPTS: let scripts call noscript commands.
    pub disable_deny_script: AtomicBool,
    /// The function libraries' code (and the generation it is of), kept
    /// apart from the interpreters so that a snapshot can read it while a
    /// script holds them.
    library_codes: parking_lot::Mutex<(u64, Vec<Vec<u8>>)>,
}

/// A slot for an idle interpreter, on a cache line of its own: a thread
/// that runs keyed scripts back to back writes only its own slot's line.
#[repr(align(128))]
#[derive(Default)]
struct Slot(Mutex<Option<EvalVm>>);

thread_local! {
    /// This thread's slot (modulo the slot count).
    static THREAD_INDEX: usize = {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed)
    };
}

/// How many slots for idle interpreters: two per core, so that the
/// threads that replace workers stuck behind long scripts seldom share a
/// slot with a running worker (sharing one is correct, only slower).
fn slot_count() -> usize {
    std::thread::available_parallelism()
        .map_or(8, |n| n.get() * 2)
        .clamp(8, 1024)
}

/// How long a waiter sleeps between looks at the busy flag.
const BUSY_POLL: Duration = Duration::from_millis(5);
/// How long SCRIPT KILL and FUNCTION KILL wait for the killed script to end
/// before they answer.
const KILL_WAIT: Duration = Duration::from_secs(1);

impl Scripting {
    pub fn new(clients: &ClientRegistry) -> Scripting {
        let s = Scripting {
            vms: Mutex::new(Vms {
                eval: EvalVm::new(clients, 0),
                functions: functions::FunctionVm::new(clients),
            }),
            scripts: RwLock::new(ScriptCache::default()),
            slots: (0..slot_count()).map(|_| Slot::default()).collect(),
            generation: AtomicU64::new(0),
            eval_figures: Mutex::new(Vec::new()),
            gc_epoch: AtomicU64::new(0),
            run: RunState::default(),
            stats: ScriptingStats::default(),
            disable_deny_script: AtomicBool::new(false),
            library_codes: parking_lot::Mutex::new((0, Vec::new())),
        };
        {
            let mut vms = s.vms.lock();
            s.eval_figures.lock().push(vms.eval.host.figure.clone());
            s.refresh_stats(&mut vms);
        }
        s
    }

    /// A new EVAL interpreter, counted in INFO's figures.
    fn new_eval_vm(&self, clients: &ClientRegistry, generation: u64) -> EvalVm {
        let mut vm = EvalVm::new(clients, generation);
        vm.host.gc_epoch = self.gc_epoch();
        self.eval_figures.lock().push(vm.host.figure.clone());
        vm
    }

    /// The memory of every EVAL interpreter (the main one and those of
    /// keyed scripts), Redis's used_memory_lua.
    pub fn eval_vms_memory(&self) -> u64 {
        let mut figures = self.eval_figures.lock();
        figures.retain(|f| Arc::strong_count(f) > 1);
        figures.iter().map(|f| f.load(Ordering::Relaxed)).sum()
    }

    /// The current collection epoch (see `collect_all`).
    #[inline]
    pub fn gc_epoch(&self) -> u64 {
        self.gc_epoch.load(Ordering::Acquire)
    }

    /// Collects every interpreter but `except` (the one whose script
    /// called collectgarbage("collect"), collected already): Redis has
    /// one interpreter, whose collection frees all a script left. Idle
    /// pooled interpreters are collected now, as are the main EVAL and
    /// the functions interpreters when `held` (or when their mutex is
    /// free); any other collects after its next script (its epoch is
    /// behind). Returns the new epoch.
    pub(crate) fn collect_all(&self, held: Option<&mut Vms>, except: *const host::Host) -> u64 {
        let epoch = self.gc_epoch.fetch_add(1, Ordering::AcqRel) + 1;
        let collect = |host: &mut host::Host| {
            if !std::ptr::eq(host, except) {
                host.collect(0);
            }
            host.gc_epoch = epoch;
        };
        let mut guard = None;
        let vms = match held {
            Some(vms) => Some(vms),
            None => {
                guard = self.vms.try_lock();
                guard.as_deref_mut()
            }
        };
        if let Some(vms) = vms {
            collect(&mut vms.eval.host);
            collect(&mut vms.functions.host);
            let st = &self.stats;
            st.eval_vm_memory
                .store(vms.eval.host.memory(), Ordering::Relaxed);
            st.functions_vm_memory
                .store(vms.functions.host.memory(), Ordering::Relaxed);
        }
        drop(guard);
        // A slot is locked only to put or take an interpreter, never
        // while one runs.
        for slot in self.slots.iter() {
            if let Some(vm) = slot.0.lock().as_mut() {
                collect(&mut vm.host);
            }
        }
        epoch
    }

    /// The BUSY error other clients get while a script is timed out.
    #[inline]
    pub fn busy_error(&self) -> Option<Error> {
        if !self.run.timed_out.load(Ordering::Acquire) {
            return None;
        }
        Some(if self.run.is_eval.load(Ordering::Relaxed) {
            BUSY_EVAL
        } else {
            BUSY_FUNCTION
        })
    }

    pub fn is_running(&self) -> bool {
        self.run.running.load(Ordering::Acquire)
    }

    /// Takes the interpreters. While a timed-out script holds them, a
    /// waiter gives up with the BUSY error (when `allow_busy` is false)
    /// instead of waiting for the script to end.
    pub fn lock(&self) -> Result<MutexGuard<'_, Vms>, Error> {
        if let Some(g) = self.vms.try_lock() {
            return Ok(g);
        }
        let mut released = false;
        loop {
            if let Some(e) = self.busy_error() {
                return Err(e);
            }
            if let Some(g) = self.vms.try_lock_for(BUSY_POLL) {
                return Ok(g);
            }
            if !released {
                released = true;
                crate::util::blocking::release_worker();
            }
        }
    }

    /// SCRIPT KILL (`eval` true) and FUNCTION KILL (Redis's scriptKill).
    pub fn kill(&self, eval: bool) -> Result<(), Error> {
        let run = &self.run;
        if !run.running.load(Ordering::Acquire) {
            return Err(Error::constant(
                "NOTBUSY No scripts in execution right now.",
            ));
        }
        if run.wrote.load(Ordering::Acquire) {
            return Err(Error::constant("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."));
        }
        let is_eval = run.is_eval.load(Ordering::Relaxed);
        if eval && !is_eval {
            return Err(BUSY_FUNCTION);
        }
        if !eval && is_eval {
            return Err(BUSY_EVAL);
        }
        run.killed.store(true, Ordering::Release);
        // In Redis the kill is read inside the script's hook, which then
        // ends the script, so a command sent after the OK never gets BUSY.
        // Here the script runs on another thread: wait for it to notice
        // (its hook runs every few thousand instructions), within a bound,
        // since a script blocked on a shard this connection holds cannot.
        let deadline = std::time::Instant::now() + KILL_WAIT;
        let mut released = false;
        while run.running.load(Ordering::Acquire)
            && run.killed.load(Ordering::Acquire)
            && std::time::Instant::now() < deadline
        {
            if !released {
                released = true;
                crate::util::blocking::release_worker();
            } else {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        Ok(())
    }

    /// FUNCTION STATS's view of the running function, None when none runs.
    pub fn running_function(&self) -> Option<RunInfo> {
        if !self.is_running() {
            return None;
        }
        self.run.info.lock().clone()
    }

    pub fn running_eval(&self) -> bool {
        self.is_running() && self.run.is_eval.load(Ordering::Relaxed)
    }

    /// Every function library's code, in load order (what snapshots keep).
    pub fn library_codes(&self) -> Vec<Vec<u8>> {
        self.library_codes.lock().1.clone()
    }

    /// The libraries dump.rdb keeps: all, or with rdb-save-js-libraries
    /// off only those Redis can load (its engine is Lua; a Redis given a
    /// JavaScript library refuses the whole file, see docs/SCRIPTING.md).
    pub fn library_codes_for_rdb(&self, config: &crate::config::Config) -> Vec<Vec<u8>> {
        let mut codes = self.library_codes();
        if !config.rdb_save_js_libraries() {
            codes.retain(|c| eval::lang_of(c) != eval::Lang::Js);
        }
        codes
    }

    /// Loads a library from a snapshot or a log; `replace` as FUNCTION
    /// LOAD REPLACE.
    pub fn load_library(
        &self,
        config: &crate::config::Config,
        code: &[u8],
        replace: bool,
    ) -> Result<String, Error> {
        let mut vms = self.vms.lock();
        vms.functions.js_memory_limit = js_memory_limit(config);
        let r = vms.functions.load(code, replace);
        self.refresh_stats(&mut vms);
        r
    }

    /// Drops every library (emptying the dataset before a reload).
    pub fn flush_functions(&self) {
        let mut vms = self.vms.lock();
        vms.functions.flush();
        self.refresh_stats(&mut vms);
    }

    /// Publishes the figures INFO reads.
    pub fn refresh_stats(&self, vms: &mut Vms) {
        let mut codes = self.library_codes.lock();
        if codes.0 != vms.functions.generation {
            *codes = (
                vms.functions.generation,
                vms.functions
                    .libraries
                    .iter()
                    .map(|l| l.code.clone())
                    .collect(),
            );
        }
        drop(codes);
        let st = &self.stats;
        st.eval_vm_memory
            .store(vms.eval.host.memory(), Ordering::Relaxed);
        st.functions_vm_memory
            .store(vms.functions.host.memory(), Ordering::Relaxed);
        let scripts = self.scripts.read();
        st.cached_scripts
            .store(scripts.len() as u64, Ordering::Relaxed);
        st.cached_scripts_memory.store(
            scripts.values().map(|s| s.memory()).sum(),
            Ordering::Relaxed,
        );
        drop(scripts);
        st.functions
            .store(vms.functions.function_count() as u64, Ordering::Relaxed);
        st.libraries
            .store(vms.functions.libraries.len() as u64, Ordering::Relaxed);
        st.functions_memory
            .store(vms.functions.memory_overhead(), Ordering::Relaxed);
        let js = vms
            .functions
            .libraries
            .iter()
            .filter(|l| l.lang == eval::Lang::Js);
        let (libs, fns) = js.fold((0, 0), |(l, f), lib| (l + 1, f + lib.functions.len()));
        st.js_libraries.store(libs, Ordering::Relaxed);
        st.js_functions.store(fns as u64, Ordering::Relaxed);
    }

    /// A cached EVAL script.
    pub fn script(&self, sha: &[u8; 40]) -> Option<Arc<Script>> {
        self.scripts.read().get(sha).cloned()
    }

    pub fn script_exists(&self, sha: &[u8; 40]) -> bool {
        self.scripts.read().contains_key(sha)
    }

    /// Caches a script (EVAL of a new script, SCRIPT LOAD), compiled in
    /// `vm` first so that a script that does not compile is refused and
    /// not cached. Returns its SHA, the script and whether it was new.
    pub fn create(
        &self,
        vm: &mut EvalVm,
        body: &[u8],
    ) -> Result<([u8; 40], Arc<Script>, bool), Error> {
        let sha = sha1_hex(body);
        if let Some(s) = self.script(&sha) {
            vm.function(&sha, &s)?;
            return Ok((sha, s, false));
        }
        let script = Script::new(body)?;
        vm.function(&sha, &script)?;
        let mut scripts = self.scripts.write();
        let entry = scripts.entry(sha);
        let new = matches!(entry, std::collections::hash_map::Entry::Vacant(_));
        let script = entry.or_insert_with(|| Arc::new(script)).clone();
        drop(scripts);
        if new {
            self.stats.cached_scripts.fetch_add(1, Ordering::Relaxed);
            self.stats
                .cached_scripts_memory
                .fetch_add(script.memory(), Ordering::Relaxed);
        }
        Ok((sha, script, new))
    }

    /// SCRIPT FLUSH: an empty cache and new interpreters.
    pub fn flush_scripts(&self, vms: &mut Vms, clients: &ClientRegistry) {
        let generation = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        self.scripts.write().clear();
        vms.eval = self.new_eval_vm(clients, generation);
        // The interpreters of keyed scripts go too (one running now is
        // dropped when it is given back).
        for slot in self.slots.iter() {
            let old = slot.0.lock().take();
            drop(old);
        }
        host::trim_heap();
        self.refresh_stats(vms);
    }

    /// Whether an EVAL-family call runs keyed (holding only the shards of
    /// its KEYS): its script is keyed, as this thread's interpreter
    /// already knows, or as the cache or a look at the given body says.
    /// `target`: the script's body (EVAL), or its SHA1 (EVALSHA, `by_sha`).
    pub fn runs_keyed(&self, target: &[u8], by_sha: bool) -> bool {
        let (sha, body) = if by_sha {
            match eval::normalize_sha(target) {
                Some(sha) => (sha, None),
                None => return false,
            }
        } else {
            (sha1_hex(target), Some(target))
        };
        // Only keyed scripts are compiled in the local interpreter.
        let generation = self.generation.load(Ordering::Acquire);
        let local = matches!(&*self.own_slot().0.lock(), Some(vm)
            if vm.generation == generation && vm.compiled(&sha).is_some());
        if local {
            return true;
        }
        match (self.script(&sha), body) {
            (Some(s), _) => s.keyed,
            (None, Some(body)) => {
                eval::lang_of(body) == eval::Lang::Lua
                    && eval::parse_shebang(body).is_ok_and(|(_, len)| keyed::is_keyed(&body[len..]))
            }
            (None, None) => false,
        }
    }

    fn own_slot(&self) -> &Slot {
        &self.slots[THREAD_INDEX.with(|i| *i) % self.slots.len()]
    }

    /// An interpreter for a keyed script: the one in this thread's slot,
    /// else an idle one from another thread's slot (a client whose
    /// connection moved between threads keeps using one interpreter),
    /// else a new one. A thread that runs keyed scripts back to back thus
    /// touches nothing another thread writes, there are only as many
    /// interpreters as keyed scripts ever ran at once, and every idle one
    /// is within reach (of SCRIPT FLUSH, of collectgarbage()).
    pub(crate) fn take_vm(&self, clients: &ClientRegistry) -> EvalVm {
        let generation = self.generation.load(Ordering::Acquire);
        let n = self.slots.len();
        let own = THREAD_INDEX.with(|i| *i) % n;
        for i in 0..n {
            let slot = &self.slots[(own + i) % n].0;
            let vm = if i == 0 {
                slot.lock().take()
            } else {
                slot.try_lock().and_then(|mut s| s.take())
            };
            // One from before a SCRIPT FLUSH is dropped.
            if let Some(vm) = vm.filter(|vm| vm.generation == generation) {
                return vm;
            }
        }
        self.new_eval_vm(clients, generation)
    }

    /// Returns an interpreter to this thread's slot, or another free one
    /// (or drops it: when SCRIPT FLUSH ran meanwhile, or when every slot
    /// is taken).
    pub(crate) fn give_back(&self, vm: EvalVm) {
        let n = self.slots.len();
        let own = THREAD_INDEX.with(|i| *i) % n;
        let mut vm = Some(vm);
        for i in 0..n {
            let slot = &self.slots[(own + i) % n].0;
            let guard = if i == 0 {
                Some(slot.lock())
            } else {
                slot.try_lock()
            };
            if let Some(mut guard) = guard {
                // Read under the slot's lock: SCRIPT FLUSH bumps the
                // generation before it empties the slots.
                if vm
                    .as_ref()
                    .is_some_and(|vm| vm.generation != self.generation.load(Ordering::Acquire))
                {
                    return;
                }
                if guard.is_none() {
                    *guard = vm.take();
                    return;
                }
            }
        }
    }

    /// Marks a script as started (Redis's scriptPrepareForRun bookkeeping).
    pub(crate) fn begin_run(&self, is_eval: bool, info: Option<RunInfo>) {
        let run = &self.run;
        run.killed.store(false, Ordering::Relaxed);
        run.wrote.store(false, Ordering::Relaxed);
        run.is_eval.store(is_eval, Ordering::Relaxed);
        if info.is_some() {
            *run.info.lock() = info;
        }
        run.running.store(true, Ordering::Release);
    }

    /// Marks the end of a script (scriptResetRun): others stop getting BUSY.
    pub(crate) fn end_run(&self, is_eval: bool) {
        let run = &self.run;
        run.running.store(false, Ordering::Release);
        run.timed_out.store(false, Ordering::Release);
        run.killed.store(false, Ordering::Relaxed);
        if !is_eval {
            *run.info.lock() = None;
        }
    }
}

/// js-memory-limit, as a JavaScript runtime reads it.
pub fn js_memory_limit(config: &crate::config::Config) -> usize {
    config.js_memory_limit().max(1 << 20) as usize
}

/// Redis's sha1hex: the lower-case hex SHA1 of `data`.
pub fn sha1_hex(data: &[u8]) -> [u8; 40] {
    use sha1::{Digest, Sha1};
    let digest = Sha1::digest(data);
    let mut out = [0u8; 40];
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (i, b) in digest.iter().enumerate() {
        out[i * 2] = HEX[(b >> 4) as usize];
        out[i * 2 + 1] = HEX[(b & 0xf) as usize];
    }
    out
}

/// Logs a line from a script (redis.log, Redis's levels 0 to 3) through
/// the engine's log.
pub fn log(level: u8, msg: &str) {
    use crate::log::Level;
    let level = match level {
        0 => Level::Debug,
        1 => Level::Verbose,
        2 => Level::Notice,
        _ => Level::Warning,
    };
    crate::log::log(level, msg);
}

impl crate::engine::ScriptEngines for Scripting {
    fn busy_error(&self) -> Option<Error> {
        Scripting::busy_error(self)
    }

    fn memory(&self) -> u64 {
        let s = &self.stats;
        let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        self.eval_vms_memory()
            + get(&s.functions_vm_memory)
            + get(&s.cached_scripts_memory)
            + get(&s.functions_memory)
    }

    fn library_codes(&self, config: &crate::config::Config, for_rdb: bool) -> Vec<Vec<u8>> {
        if for_rdb {
            self.library_codes_for_rdb(config)
        } else {
            Scripting::library_codes(self)
        }
    }

    fn load_library(
        &self,
        config: &crate::config::Config,
        code: &[u8],
        replace: bool,
    ) -> Result<String, Error> {
        Scripting::load_library(self, config, code, replace)
    }

    fn flush_functions(&self) {
        Scripting::flush_functions(self)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl crate::Engine {
    /// The scripting engines (the core holds them as
    /// [`crate::engine::ScriptEngines`]).
    pub fn scripting(&self) -> &Scripting {
        self.scripts()
            .as_any()
            .downcast_ref()
            .expect("an engine's scripts are crate::scripting's")
    }
}
