//! Builds Lua 5.1's pattern matching with a hook call (c/lpattern.c, see
//! its header), against the headers of the Lua that mlua builds (mlua-sys
//! passes their directory on as DEP_LUA_INCLUDE).

fn main() {
    let include = std::env::var("DEP_LUA_INCLUDE").expect("mlua-sys gives Lua's include directory");
    println!("cargo:rerun-if-changed=c/lpattern.c");
    cc::Build::new()
        .file("c/lpattern.c")
        .include(include)
        .warnings(true)
        .compile("goblin_lpattern");
}
