//! Small pieces shared by many commands: Redis's number parsing and
//! formatting, glob matching, the clock, and the C sorts whose order
//! replies keep.

pub mod blocking;
pub mod glob;
pub mod number;
pub mod sort;
pub mod time;

pub use glob::glob_match;
pub use number::{parse_f64, parse_i64};
