fn main() {
    println!("cargo:rerun-if-changed=csrc/ldouble.c");
    cc::Build::new()
        .file("csrc/ldouble.c")
        .opt_level(2)
        .compile("goblin_ldouble");
}
