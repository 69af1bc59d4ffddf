//! oom-score-adj and oom-score-adj-values (Redis's setOOMScoreAdj): the
//! process's /proc/self/oom_score_adj, set from the value of its class
//! (master, replica, background child), relative to the score the process
//! had when Goblin first changed it, or absolute. Turning the option off
//! restores that score. Goblin applies the master class's value, also
//! while it is a replica (where Redis uses the replica class), and its
//! background saves are threads, not child processes.
//!
//! The score belongs to the process, so what remembers the original score
//! is process-wide too.

use parking_lot::Mutex;

const PROC_FILE: &str = "/proc/self/oom_score_adj";

/// The score before Goblin changed it, while it is changed.
static BASE: Mutex<Option<i64>> = Mutex::new(None);

/// Applies the configuration (`mode`: no, yes, relative or absolute;
/// `values`: the three classes' values). Errors are logged, as Redis
/// logs them, and returned.
pub fn apply(mode: &str, values: &str) -> std::io::Result<()> {
    let mut base = BASE.lock();
    let val = if mode != "no" {
        let b = match *base {
            Some(b) => b,
            None => {
                let b = match std::fs::read_to_string(PROC_FILE) {
                    Ok(text) => text.trim().parse::<i64>().unwrap_or(0),
                    Err(e) => {
                        crate::log::warning(&format!("Unable to read oom_score_adj: {e}"));
                        return Err(e);
                    }
                };
                *base = Some(b);
                b
            }
        };
        let master: i64 = values
            .split_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let v = if mode == "absolute" {
            master
        } else {
            master + b
        };
        v.clamp(-1000, 1000)
    } else if let Some(b) = base.take() {
        b
    } else {
        return Ok(());
    };
    if let Err(e) = std::fs::write(PROC_FILE, format!("{val}\n")) {
        crate::log::warning(&format!("Unable to write oom_score_adj: {e}"));
        return Err(e);
    }
    Ok(())
}

/// Validates oom-score-adj-values: three integers between -2000 and 2000.
pub fn parse_values(value: &str) -> Result<String, String> {
    let parts: Vec<&str> = value.split_whitespace().collect();
    if parts.len() != 3 {
        return Err("wrong number of arguments".into());
    }
    let mut out = Vec::with_capacity(3);
    for p in parts {
        match p.parse::<i64>() {
            Ok(v) if (-2000..=2000).contains(&v) => out.push(v),
            _ => {
                return Err(
                    "Invalid oom-score-adj-values, elements must be between -2000 and 2000.".into(),
                )
            }
        }
    }
    if out[1] < out[0] || out[2] < out[1] {
        crate::log::warning(
            "The oom-score-adj-values configuration may not work for non-privileged processes! Please consult the documentation.",
        );
    }
    Ok(format!("{} {} {}", out[0], out[1], out[2]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_three_integers_within_2000() {
        assert_eq!(parse_values("10  20 30").unwrap(), "10 20 30");
        assert_eq!(
            parse_values("1 2").unwrap_err(),
            "wrong number of arguments"
        );
        for bad in ["-2001 0 0", "0 2001 0", "0 0 x", "1.5 2 3"] {
            assert_eq!(
                parse_values(bad).unwrap_err(),
                "Invalid oom-score-adj-values, elements must be between -2000 and 2000.",
                "{bad}"
            );
        }
    }
}
