//! `stacksym`: the tool over the stacksym library. One binary, one subcommand per job, each
//! with the flags and output of the tool its users know:
//!
//! - `stacksym symbolize`: address dumps and queries, with llvm-symbolizer's flags and layout
//!   (`--obj`, `--pid`, `--kernel`, `--find`, `--find-usdt`, stacks from bpftrace and perf);
//! - `stacksym perf`: a `perf record --call-graph dwarf|fp` recording unwound and printed as
//!   `perf script` prints it (`--report`, `--folded`, `--flamegraph`);
//! - `stacksym pstack`: the stacks of every thread of a live process (`eu-stack -p`) or a core
//!   file (`--core`).
//!
//! This file only dispatches: each subcommand parses its own arguments (clap) and owns its
//! output; the library does the work.

mod perf;
mod pstack;
mod symbolize;

use std::ffi::OsString;
use std::process::ExitCode;

/// The subcommands: name, one line of help, entry point.
type Entry = fn(Vec<OsString>) -> ExitCode;
const COMMANDS: [(&str, &str, Entry); 3] = [
    (
        "symbolize",
        "Symbolize addresses, dumps and stacks (llvm-symbolizer's flags and layout)",
        symbolize::main,
    ),
    (
        "perf",
        "Unwind a perf.data recording and print it as `perf script` / `perf report` do",
        perf::main,
    ),
    (
        "pstack",
        "Print the stack of every thread of a process or a core file (like eu-stack)",
        pstack::main,
    ),
];

fn usage() -> String {
    let mut text = format!(
        "stacksym {}: turn raw addresses into symbols, source lines and call stacks\n\n\
         Usage: stacksym <COMMAND> [ARGS]...\n\nCommands:\n",
        env!("CARGO_PKG_VERSION")
    );
    for (name, help, _) in COMMANDS {
        text.push_str(&format!("  {name:<10} {help}\n"));
    }
    text.push_str(
        "\nSee 'stacksym <COMMAND> --help' (or 'stacksym help <COMMAND>') for a command's flags.\n",
    );
    text
}

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let Some(command) = args.next() else {
        eprint!("{}", usage());
        return ExitCode::from(1);
    };
    let mut rest: Vec<OsString> = args.collect();
    let mut name = command.to_string_lossy().into_owned();
    match name.as_str() {
        "-h" | "--help" => {
            print!("{}", usage());
            return ExitCode::SUCCESS;
        }
        "-V" | "--version" => {
            println!("stacksym {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        // `stacksym help perf` is `stacksym perf --help`, as in git and cargo.
        "help" => match rest.first() {
            Some(sub) => {
                name = sub.to_string_lossy().into_owned();
                rest = vec![OsString::from("--help")];
            }
            None => {
                print!("{}", usage());
                return ExitCode::SUCCESS;
            }
        },
        _ => {}
    }
    match COMMANDS.iter().find(|(known, _, _)| *known == name) {
        Some((known, _, entry)) => {
            let mut argv = Vec::with_capacity(rest.len() + 1);
            argv.push(OsString::from(format!("stacksym {known}")));
            argv.extend(rest);
            entry(argv)
        }
        None => {
            eprintln!("stacksym: '{name}' is not a command\n");
            eprint!("{}", usage());
            ExitCode::from(1)
        }
    }
}
