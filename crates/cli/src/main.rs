//! The `fbunload` binary: the command line of [`fbunload_cli`].

fn main() {
    std::process::exit(fbunload_cli::run(std::env::args_os().collect()));
}
