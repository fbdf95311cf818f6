//! The `benchctl` command line: parses arguments and hands each subcommand to the library that
//! does the work.

fn main() {
    println!("benchctl");
}
