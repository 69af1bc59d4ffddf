//! The process's open files limit, fitted to maxclients at startup as
//! Redis's adjustOpenFilesLimit does: raised when it can be, and
//! maxclients lowered to what fits when it cannot, so that a client over
//! the limit is refused with an error reply rather than left unaccepted.

use crate::log;
use goblin_engine::Config;

/// Descriptors kept for what is not a client: listeners, files being
/// saved or loaded, the log (Redis's CONFIG_MIN_RESERVED_FDS).
pub const RESERVED_FDS: u64 = 32;

/// Raises RLIMIT_NOFILE to maxclients + RESERVED_FDS, or as near as the
/// system allows, and lowers maxclients to fit what it got. Err when not
/// even one client fits (the server does not start).
pub fn adjust_open_files_limit(config: &Config) -> Result<(), String> {
    let maxclients = config.maxclients().max(1) as u64;
    let wanted = maxclients + RESERVED_FDS;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == -1 {
        log::warning(&format!(
            "Unable to obtain the current NOFILE limit ({}), assuming 1024 and setting the max clients configuration accordingly.",
            std::io::Error::last_os_error()
        ));
        set_maxclients(config, 1024 - RESERVED_FDS);
        return Ok(());
    }
    let old = limit.rlim_cur;
    if old >= wanted {
        return Ok(());
    }
    // The highest limit at or below the wanted one that the system takes,
    // 16 descriptors at a time.
    let mut best = wanted;
    let mut error = None;
    while best > old {
        let try_limit = libc::rlimit {
            rlim_cur: best,
            rlim_max: best,
        };
        // SAFETY: setrlimit reads the struct it is given.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &try_limit) } != -1 {
            break;
        }
        error = Some(std::io::Error::last_os_error());
        if best < 16 {
            best = old;
            break;
        }
        best -= 16;
    }
    best = best.max(old);
    if best >= wanted {
        log::notice(&format!(
            "Increased maximum number of open files to {wanted} (it was originally set to {old})."
        ));
        return Ok(());
    }
    if best <= RESERVED_FDS {
        return Err(format!(
            "Your current 'ulimit -n' of {old} is not enough for the server to start. \
             Please increase your open file limit to at least {wanted}. Exiting."
        ));
    }
    let reduced = best - RESERVED_FDS;
    log::warning(&format!(
        "You requested maxclients of {maxclients} requiring at least {wanted} max file descriptors."
    ));
    log::warning(&format!(
        "Server can't set maximum open files to {wanted} because of OS error: {}.",
        error.map_or_else(|| "unknown".to_string(), |e| e.to_string())
    ));
    log::warning(&format!(
        "Current maximum open files is {best}. maxclients has been reduced to {reduced} to \
         compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'."
    ));
    set_maxclients(config, reduced);
    Ok(())
}

fn set_maxclients(config: &Config, n: u64) {
    config
        .set_initial("maxclients", &n.to_string())
        .expect("a count of clients is a valid maxclients");
}
