//! Loading the dataset: at start (the append-only file, or the snapshot)
//! and for DEBUG RELOAD / DEBUG LOADAOF. An append-only file is replayed
//! command by command through a session (`aof::replay`), so loading sits
//! above the command layer; the core's persistence (saving, rewriting,
//! the cron) never calls it.

use super::*;

/// Startup: loads the data (the AOF when appendonly is on and it exists,
/// the snapshot otherwise) and opens the AOF. An error is fatal: the
/// server must not start with less data than it was given.
pub fn load_on_start(engine: &Arc<Engine>) -> Result<(), String> {
    remove_stale_temp_files(engine);
    let aof_on = engine.config().appendonly();
    let started = std::time::Instant::now();
    let mut from_aof = false;
    {
        let mut locks = engine.keyspace().lock_all();
        if aof_on {
            engine.persist().loading.store(true, Ordering::Relaxed);
            let r = aof::load_all(engine, &mut locks);
            engine.persist().loading.store(false, Ordering::Relaxed);
            match r {
                Ok(true) => {
                    from_aof = true;
                    log::notice(&format!(
                        "DB loaded from append only file: {:.3} seconds",
                        started.elapsed().as_secs_f64()
                    ));
                }
                Ok(false) => {}
                Err(aof::LoadFailure(msg)) => return Err(msg),
            }
        }
        if !from_aof {
            let loaded = load_rdb_file(engine, &mut locks, false)
                .map_err(|e| format!("{e}\nTerminating server after rdb file reading failure."))?;
            if let Some(l) = loaded {
                if let Some(info) = l.repl {
                    crate::repl::restore_on_start(engine, info, &l.expired_keys);
                }
            }
        }
    }
    if aof_on {
        aof::open_on_start(engine).map_err(|e| format!("Can't open the append-only file: {e}"))?;
    }
    engine.reset_dirty();
    Ok(())
}

/// What DEBUG RELOAD and DEBUG LOADAOF do.
#[derive(Clone, Copy, Debug)]
pub enum Reload {
    /// `DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]`.
    Rdb {
        save: bool,
        flush: bool,
        merge: bool,
    },
    /// DEBUG LOADAOF.
    Aof,
}

/// DEBUG RELOAD (save, empty, load the snapshot back) and DEBUG LOADAOF
/// (write the log, empty, replay it), with every shard held. Emptying
/// takes the function libraries too, as Redis's emptyData does.
pub fn debug_reload(
    engine: &Arc<Engine>,
    locks: &mut ShardLocks<'_>,
    how: Reload,
) -> Result<(), String> {
    if let Reload::Rdb { save, flush, merge } = how {
        if save {
            save_locked(engine, locks).map_err(|e| format!("Error trying to save the DB: {e}"))?;
        }
        if flush {
            flush_held(locks);
            engine.scripts().flush_functions();
            engine.tracking_data_replaced();
        }
        if let Err(e) = load_rdb_file(engine, locks, merge) {
            log::warning(&e);
            return Err("Error trying to load the RDB dump".into());
        }
        log::warning("DB reloaded by DEBUG RELOAD");
    } else {
        if engine.persist().aof.is_on() {
            engine
                .persist()
                .aof
                .flush_now()
                .map_err(|e| e.to_string())?;
        }
        flush_held(locks);
        engine.scripts().flush_functions();
        engine.tracking_data_replaced();
        engine.persist().loading.store(true, Ordering::Relaxed);
        let r = aof::load_all(engine, locks);
        engine.persist().loading.store(false, Ordering::Relaxed);
        r.map_err(|aof::LoadFailure(m)| m)?;
        log::warning("Append Only File loaded by DEBUG LOADAOF");
    }
    engine.reset_dirty();
    Ok(())
}

fn flush_held(locks: &mut ShardLocks<'_>) {
    for shard in locks.held_mut() {
        for db in shard.dbs.iter_mut() {
            // A snapshot running meanwhile keeps the old table.
            drop(db.clear());
        }
    }
}

impl Engine {
    /// DEBUG RELOAD / DEBUG LOADAOF: save and load the dataset back.
    pub fn debug_reload(
        &self,
        locks: &mut ShardLocks<'_>,
        how: Reload,
    ) -> Result<(), crate::Error> {
        debug_reload(&self.arc(), locks, how).map_err(crate::Error::err)
    }
}
