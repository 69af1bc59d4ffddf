//! ACL users through real clients: a restricted user's command and key
//! permissions, the NOPERM texts Redis sends, ACL LOG, and what deleting a
//! user does to its connections. (The Redis Tcl units unit/acl and
//! unit/acl-v2 cover the rule language in depth.)

use crate::common::{err_text, TestServer};
use redis::Value;

fn setuser(c: &mut redis::Connection, name: &str, rules: &[&str]) {
    let r: String = redis::cmd("ACL")
        .arg("SETUSER")
        .arg(name)
        .arg(rules)
        .query(c)
        .unwrap();
    assert_eq!(r, "OK");
}

fn auth(s: &TestServer, user: &str, pass: &str) -> redis::Connection {
    let mut c = s.client();
    let r: String = redis::cmd("AUTH")
        .arg(user)
        .arg(pass)
        .query(&mut c)
        .unwrap();
    assert_eq!(r, "OK");
    c
}

#[test]
fn restricted_user_gets_noperm_for_commands_and_keys() {
    let s = TestServer::start();
    let mut admin = s.client();
    setuser(
        &mut admin,
        "reader",
        &[
            "on",
            ">secret",
            "%R~app:*",
            "~own:*",
            "+@read",
            "+set",
            "+acl|whoami",
        ],
    );
    let _: () = redis::cmd("SET")
        .arg("app:1")
        .arg("v")
        .query(&mut admin)
        .unwrap();

    let mut c = auth(&s, "reader", "secret");
    let whoami: String = redis::cmd("ACL").arg("WHOAMI").query(&mut c).unwrap();
    assert_eq!(whoami, "reader");
    let v: String = redis::cmd("GET").arg("app:1").query(&mut c).unwrap();
    assert_eq!(v, "v");
    // Readable but not writable.
    assert_eq!(
        err_text(
            redis::cmd("SET")
                .arg("app:1")
                .arg("x")
                .query::<Value>(&mut c)
        ),
        "NOPERM this user has no permissions to access one of the keys used as arguments"
    );
    // Not in any pattern.
    assert_eq!(
        err_text(redis::cmd("GET").arg("other").query::<Value>(&mut c)),
        "NOPERM this user has no permissions to access one of the keys used as arguments"
    );
    // A command outside the user's categories.
    assert_eq!(
        err_text(redis::cmd("DEL").arg("own:1").query::<Value>(&mut c)),
        "NOPERM this user has no permissions to run the 'del' command"
    );
    let ok: String = redis::cmd("SET")
        .arg("own:1")
        .arg("x")
        .query(&mut c)
        .unwrap();
    assert_eq!(ok, "OK");
    // The refused write left the value as it was.
    let v: String = redis::cmd("GET").arg("app:1").query(&mut admin).unwrap();
    assert_eq!(v, "v");

    // Each refusal is in the ACL log, newest first.
    let log: Vec<Value> = redis::cmd("ACL").arg("LOG").query(&mut admin).unwrap();
    assert_eq!(log.len(), 3);
    let newest = match &log[0] {
        Value::Array(fields) => fields.clone(),
        other => panic!("ACL LOG entry: {other:?}"),
    };
    let field = |name: &str| -> Value {
        let i = newest
            .iter()
            .position(|v| matches!(v, Value::BulkString(b) if b == name.as_bytes()))
            .unwrap_or_else(|| panic!("no {name} in {newest:?}"));
        newest[i + 1].clone()
    };
    assert_eq!(field("reason"), Value::BulkString(b"command".to_vec()));
    assert_eq!(field("object"), Value::BulkString(b"del".to_vec()));
    assert_eq!(field("username"), Value::BulkString(b"reader".to_vec()));
}

#[test]
fn wrong_password_and_disabled_user_are_refused() {
    let s = TestServer::start();
    let mut admin = s.client();
    setuser(&mut admin, "alice", &["on", ">pw", "+@all", "~*"]);
    setuser(&mut admin, "bob", &["off", ">pw", "+@all", "~*"]);
    let mut c = s.client();
    let wrong = "WRONGPASS invalid username-password pair or user is disabled.";
    assert_eq!(
        err_text(
            redis::cmd("AUTH")
                .arg("alice")
                .arg("nope")
                .query::<Value>(&mut c)
        ),
        wrong
    );
    assert_eq!(
        err_text(
            redis::cmd("AUTH")
                .arg("bob")
                .arg("pw")
                .query::<Value>(&mut c)
        ),
        wrong
    );
    // The failed attempts left the connection as the default user.
    let whoami: String = redis::cmd("ACL").arg("WHOAMI").query(&mut c).unwrap();
    assert_eq!(whoami, "default");
}

#[test]
fn deleting_a_user_closes_its_connections() {
    let s = TestServer::start();
    let mut admin = s.client();
    setuser(&mut admin, "temp", &["on", ">pw", "+@all", "~*"]);
    let mut c = auth(&s, "temp", "pw");
    let pong: String = redis::cmd("PING").query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
    let n: i64 = redis::cmd("ACL")
        .arg("DELUSER")
        .arg("temp")
        .query(&mut admin)
        .unwrap();
    assert_eq!(n, 1);
    assert!(redis::cmd("PING").query::<String>(&mut c).is_err());
    let users: Vec<String> = redis::cmd("ACL").arg("USERS").query(&mut admin).unwrap();
    assert_eq!(users, vec!["default".to_string()]);
}
