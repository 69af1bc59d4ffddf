//! `goblin-server [config-file] [--directive value ...]`, read the way
//! `redis-server` reads its arguments: an optional config file ("-" for
//! standard input) with one `directive arg...` per line, then directives
//! from the command line that override it.

use goblin_engine::protocol::split_args;
use goblin_engine::Config;

/// What the command line asks for.
pub enum Invocation {
    Run {
        config: Box<Config>,
        config_file: Option<String>,
    },
    Version,
    Help,
}

pub fn usage() -> &'static str {
    "Usage: goblin-server [/path/to/goblin.conf] [options] [-]\n       goblin-server - (read config from stdin)\n       goblin-server -v or --version\n       goblin-server -h or --help\n\nExamples:\n       goblin-server (run the server with default config: 127.0.0.1:6379, data in ./data)\n       goblin-server /etc/goblin/6379.conf\n       goblin-server --port 7777\n       goblin-server /etc/mygoblin.conf --loglevel verbose\n"
}

/// Applies the directives of a config text (file contents).
pub fn apply_text(config: &Config, text: &str, origin: &str) -> Result<(), String> {
    for (lineno, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let args = split_args(line.as_bytes())
            .ok_or_else(|| format!("{origin}:{}: unbalanced quotes", lineno + 1))?;
        let args: Vec<String> = args
            .into_iter()
            .map(|a| String::from_utf8_lossy(&a).into_owned())
            .collect();
        apply_directive(config, &args).map_err(|e| {
            format!(
                "*** FATAL CONFIG FILE ERROR ***\n>>> '{line}'\n{e} ({origin}:{})",
                lineno + 1
            )
        })?;
    }
    Ok(())
}

fn apply_directive(config: &Config, args: &[String]) -> Result<(), String> {
    let Some((name, values)) = args.split_first() else {
        return Ok(());
    };
    let name = name.to_ascii_lowercase();
    if name == "include" {
        let path = values.first().ok_or("include needs a path")?;
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("Can't open the include file {path}: {e}"))?;
        return apply_text(config, &text, path);
    }
    if name == "user" {
        return config.add_user(values);
    }
    if IGNORED_DIRECTIVES.contains(&name.as_str()) {
        return Ok(());
    }
    // Multi-word values (save, bind, client-output-buffer-limit) are joined;
    // Redis also lets `save` appear several times, each adding a rule.
    let mut value = values.join(" ");
    if name == "save" && !values.is_empty() && !values[0].is_empty() {
        let current = config.get("save");
        if config_seen_save(config) && !current.is_empty() {
            value = format!("{current} {value}");
        }
        mark_save_seen(config);
    }
    config
        .set_initial(&name, &value)
        .map_err(|e| format!("Bad directive or wrong number of arguments: {e}"))
}

/// Redis directives that configure what Goblin does not have (replication,
/// modules, protected configs): accepted in config files so that a Redis
/// configuration (and the Redis test suite's) starts Goblin, and ignored.
const IGNORED_DIRECTIVES: &[&str] = &[
    "repl-diskless-sync",
    "repl-diskless-sync-delay",
    "repl-diskless-load",
    "repl-ping-replica-period",
    "repl-timeout",
    "repl-backlog-size",
    "slave-serve-stale-data",
    "replica-serve-stale-data",
    "slave-read-only",
    "replica-read-only",
    "slaveof",
    "replicaof",
    "enable-protected-configs",
    "enable-module-command",
    "propagation-error-behavior",
    "loading-process-events-interval-bytes",
];

thread_local! {
    static SAVE_SEEN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn config_seen_save(_c: &Config) -> bool {
    SAVE_SEEN.with(|s| s.get())
}

fn mark_save_seen(_c: &Config) {
    SAVE_SEEN.with(|s| s.set(true));
}

/// Parses the process arguments (without the program name).
pub fn parse_args(args: &[String]) -> Result<Invocation, String> {
    let config = Config::new();
    let mut i = 0;
    let mut config_file = None;
    if let Some(first) = args.first() {
        match first.as_str() {
            "-v" | "--version" => return Ok(Invocation::Version),
            "-h" | "--help" => return Ok(Invocation::Help),
            _ => {}
        }
        if !first.starts_with("--") {
            let text = if first == "-" {
                let mut s = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
                    .map_err(|e| e.to_string())?;
                s
            } else {
                std::fs::read_to_string(first)
                    .map_err(|e| format!("Fatal error, can't open config file '{first}': {e}"))?
            };
            apply_text(&config, &text, first)?;
            if first != "-" {
                config_file = Some(
                    std::fs::canonicalize(first)
                        .map(|p| p.display().to_string())
                        .unwrap_or_else(|_| first.clone()),
                );
            }
            i = 1;
        }
    }
    // --directive value... : every following argument up to the next
    // "--" belongs to the directive.
    SAVE_SEEN.with(|s| s.set(false));
    while i < args.len() {
        let Some(name) = args[i].strip_prefix("--") else {
            if args[i] == "-" {
                i += 1;
                continue;
            }
            return Err(format!("Invalid argument '{}'\n{}", args[i], usage()));
        };
        let mut values = Vec::new();
        i += 1;
        while i < args.len() && !args[i].starts_with("--") {
            values.push(args[i].clone());
            i += 1;
        }
        let mut directive = vec![name.to_string()];
        directive.extend(values);
        apply_directive(&config, &directive)?;
    }
    Ok(Invocation::Run {
        config: Box::new(config),
        config_file,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Config {
        match parse_args(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap() {
            Invocation::Run { config, .. } => *config,
            _ => panic!("expected run"),
        }
    }

    #[test]
    fn command_line_directives() {
        let c = run(&[
            "--port",
            "7000",
            "--save",
            "900",
            "1",
            "300",
            "10",
            "--appendonly",
            "no",
        ]);
        assert_eq!(c.get("port"), "7000");
        assert_eq!(c.get("save"), "900 1 300 10");
        assert_eq!(c.get("appendonly"), "no");
    }

    #[test]
    fn config_file_then_overrides() {
        let dir = std::env::temp_dir().join(format!("goblin-conf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("g.conf");
        std::fs::write(
            &path,
            "# comment\nport 6400\nsave 900 1\nsave 60 100\nrequirepass \"a b\"\n",
        )
        .unwrap();
        let c = run(&[path.to_str().unwrap(), "--port", "6401"]);
        assert_eq!(c.get("port"), "6401");
        assert_eq!(c.get("save"), "900 1 60 100");
        assert_eq!(c.get("requirepass"), "a b");
    }

    #[test]
    fn bad_directive_is_fatal() {
        assert!(parse_args(&["--no-such-thing".into(), "1".into()]).is_err());
        assert!(parse_args(&["--port".into(), "notaport".into()]).is_err());
    }
}
