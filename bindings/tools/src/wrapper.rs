//! The compiler wrappers: `oshcc`, `oshc++` (`oshcxx`, `oshCC`) and `oshfort` run the real
//! compiler with what oxshmem needs added, as OpenMPI's `mpicc` does:
//!
//! ```text
//! COMPILER -I<include> [-I<fortran modules>] ARGS... [-L<lib> -Wl,-rpath,<lib> -loxshmem]
//! ```
//!
//! The link flags are left out when ARGS stop before linking (`-c`, `-S`, `-E`, `-M`, `-MM`,
//! `-fsyntax-only`). The compiler is `cc`, `c++` or `gfortran`, or what `OSHCC_CC`,
//! `OSHCXX_CXX` or `OSHFORT_FC` say (split at white space, so `ccache gcc` works).
//!
//! Options of the wrapper itself, removed before the compiler sees the rest: `-show`,
//! `-showme`, `--showme` (print the command instead of running it), `--showme:compile`,
//! `--showme:link`, `--showme:incdirs`, `--showme:libdirs`, `--showme:libs`,
//! `--showme:version`, `--showme:help`, and MPICH's `-compile_info` and `-link_info`.

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};

use crate::layout::Layout;

/// The language a wrapper compiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// `oshcc`.
    C,
    /// `oshc++`, `oshcxx`, `oshCC`.
    Cxx,
    /// `oshfort`.
    Fortran,
}

impl Lang {
    /// The wrapper's name in messages.
    pub fn tool(self) -> &'static str {
        match self {
            Lang::C => "oshcc",
            Lang::Cxx => "oshc++",
            Lang::Fortran => "oshfort",
        }
    }

    /// The variable that names another compiler.
    pub fn compiler_var(self) -> &'static str {
        match self {
            Lang::C => "OSHCC_CC",
            Lang::Cxx => "OSHCXX_CXX",
            Lang::Fortran => "OSHFORT_FC",
        }
    }

    /// The compiler used when the variable is not set.
    pub fn default_compiler(self) -> &'static str {
        match self {
            Lang::C => "cc",
            Lang::Cxx => "c++",
            Lang::Fortran => "gfortran",
        }
    }

    /// The compiler command: the variable's words, or the default.
    pub fn compiler(self) -> Vec<OsString> {
        let words: Vec<OsString> = std::env::var(self.compiler_var())
            .map(|v| v.split_whitespace().map(OsString::from).collect())
            .unwrap_or_default();
        if words.is_empty() { vec![self.default_compiler().into()] } else { words }
    }
}

/// What the wrapper was asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Run the compiler.
    Run,
    /// Print the whole command.
    Show,
    /// Print the compile flags.
    ShowCompile,
    /// Print the link flags.
    ShowLink,
    /// Print the include directories.
    ShowIncdirs,
    /// Print the library directories.
    ShowLibdirs,
    /// Print the libraries.
    ShowLibs,
    /// Print the version.
    ShowVersion,
    /// Print the wrapper's help.
    ShowHelp,
}

/// The wrapper's own options, taken out of the command line.
pub fn parse_mode(args: Vec<OsString>) -> (Mode, Vec<OsString>) {
    let mut mode = Mode::Run;
    let mut rest = Vec::with_capacity(args.len());
    for a in args {
        let m = match a.to_str() {
            Some("-show" | "-showme" | "--showme" | "--show") => Mode::Show,
            Some("--showme:compile" | "-compile_info") => Mode::ShowCompile,
            Some("--showme:link" | "-link_info") => Mode::ShowLink,
            Some("--showme:incdirs") => Mode::ShowIncdirs,
            Some("--showme:libdirs") => Mode::ShowLibdirs,
            Some("--showme:libs") => Mode::ShowLibs,
            Some("--showme:version") => Mode::ShowVersion,
            Some("--showme:help") => Mode::ShowHelp,
            _ => {
                rest.push(a);
                continue;
            }
        };
        mode = m;
    }
    (mode, rest)
}

/// Whether `args` ask the compiler to stop before linking.
pub fn links(args: &[OsString]) -> bool {
    !args.iter().any(|a| matches!(a.to_str(), Some("-c" | "-S" | "-E" | "-M" | "-MM" | "-fsyntax-only")))
}

/// The flags a wrapper adds, given where things are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flags {
    /// Include directories (`-I`).
    pub incdirs: Vec<OsString>,
    /// Library directories (`-L`, and the run path).
    pub libdirs: Vec<OsString>,
    /// Libraries (`-l`).
    pub libs: Vec<OsString>,
    /// Compiler options beyond the paths (`-fallow-argument-mismatch` for gfortran >= 10).
    pub options: Vec<OsString>,
}

/// The major version of a gfortran compiler command (`None`: not gfortran, or it did not say).
fn gfortran_major(compiler: &[OsString]) -> Option<u32> {
    let name = std::path::Path::new(compiler.first()?).file_name()?.to_string_lossy().into_owned();
    if !name.contains("gfortran") {
        return None;
    }
    let out = Command::new(&compiler[0]).args(&compiler[1..]).arg("-dumpversion").output().ok()?;
    String::from_utf8_lossy(&out.stdout).trim().split('.').next()?.parse().ok()
}

/// What a Fortran compiler needs for the legacy API: gfortran 10 and later reject a file that
/// calls one external routine with arguments of different types or ranks (`SHMEM_PUT` of an
/// integer array, then of a real one) — what every `include 'shmem.fh'` program does — unless
/// told `-fallow-argument-mismatch`, as MPICH's and Open MPI's wrappers do for `mpif.h`. A user's
/// own `-fno-allow-argument-mismatch` wins.
pub fn fortran_options(compiler: &[OsString], args: &[OsString]) -> Vec<OsString> {
    if args.iter().any(|a| a == "-fno-allow-argument-mismatch") {
        return Vec::new();
    }
    match gfortran_major(compiler) {
        Some(m) if m >= 10 => vec!["-fallow-argument-mismatch".into()],
        _ => Vec::new(),
    }
}

impl Flags {
    /// The flags for `layout`; `fortran_modules` is the directory of compiled Fortran modules.
    /// Fortran also finds `shmem.fh` (`include 'shmem.fh'`): an installation has it in its
    /// include directory, a build tree beside the module source (`bindings/fortran/`).
    pub fn new(layout: &Layout, fortran_modules: Option<&std::path::Path>) -> Flags {
        let mut incdirs = vec![layout.include_dir.clone().into_os_string()];
        incdirs.extend(fortran_modules.map(|d| d.to_path_buf().into_os_string()));
        if fortran_modules.is_some()
            && layout.is_build_tree()
            && let Some(dir) = layout.fortran_source.parent()
        {
            incdirs.push(dir.to_path_buf().into_os_string());
        }
        Flags {
            incdirs,
            libdirs: vec![layout.lib_dir.clone().into_os_string()],
            libs: vec!["oxshmem".into()],
            options: Vec::new(),
        }
    }

    /// `-I<dir>` for each include directory, and the options.
    pub fn compile(&self) -> Vec<OsString> {
        let mut v: Vec<OsString> = self.options.clone();
        v.extend(self.incdirs.iter().map(|d| cat("-I", d)));
        v
    }

    /// `-L<dir> -Wl,-rpath,<dir>` for each library directory, then `-l<lib>`.
    pub fn link(&self) -> Vec<OsString> {
        let mut v = Vec::new();
        for d in &self.libdirs {
            v.push(cat("-L", d));
            v.push(cat("-Wl,-rpath,", d));
        }
        v.extend(self.libs.iter().map(|l| cat("-l", l)));
        v
    }

    /// The whole compiler command for `args`.
    pub fn command(&self, compiler: &[OsString], args: &[OsString]) -> Vec<OsString> {
        let mut cmd = compiler.to_vec();
        cmd.extend(self.compile());
        cmd.extend(args.iter().cloned());
        if links(args) {
            cmd.extend(self.link());
        }
        cmd
    }
}

fn cat(a: &str, b: &OsStr) -> OsString {
    let mut s = OsString::from(a);
    s.push(b);
    s
}

/// Quotes `word` for a POSIX shell when it needs it.
pub fn shell_quote(word: &OsStr) -> String {
    let s = word.to_string_lossy();
    let plain = !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_+=/.,:@%^".contains(c));
    if plain { s.into_owned() } else { format!("'{}'", s.replace('\'', r"'\''")) }
}

/// `words` as one shell command line.
pub fn shell_line(words: &[OsString]) -> String {
    words.iter().map(|w| shell_quote(w)).collect::<Vec<_>>().join(" ")
}

fn help(lang: Lang) -> String {
    let t = lang.tool();
    format!(
        "Usage: {t} [wrapper option] COMPILER-ARGS...\n\n\
         Runs {} (or ${}) with oxshmem's include directory{}, and unless the arguments stop\n\
         before linking (-c, -S, -E, -M, -MM, -fsyntax-only), -L<lib> -Wl,-rpath,<lib> -loxshmem.\n\n\
         Wrapper options:\n  \
         -show, --showme        print the command instead of running it\n  \
         --showme:compile       print the compile flags\n  \
         --showme:link          print the link flags\n  \
         --showme:incdirs       print the include directories\n  \
         --showme:libdirs       print the library directories\n  \
         --showme:libs          print the libraries\n  \
         --showme:version       print oxshmem's version\n  \
         --showme:help          print this help\n",
        lang.default_compiler(),
        lang.compiler_var(),
        if lang == Lang::Fortran { " and the compiled `shmem` module" } else { "" },
    )
}

/// The whole wrapper: `lang`'s tool with `args` (without the program name).
pub fn main(lang: Lang, args: Vec<OsString>) -> ExitCode {
    let tool = lang.tool();
    let (mode, args) = parse_mode(args);
    match mode {
        Mode::ShowHelp => {
            print!("{}", help(lang));
            return ExitCode::SUCCESS;
        }
        Mode::ShowVersion => {
            let (major, minor) = oxshmem::SPEC_VERSION;
            println!("{tool}: {} (OpenSHMEM {major}.{minor})", oxshmem::VENDOR_STRING);
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    let fail = |msg: String| {
        eprintln!("{tool}: {msg}");
        ExitCode::FAILURE
    };
    let layout = match Layout::locate() {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    let compiler = lang.compiler();
    let needs_modules =
        lang == Lang::Fortran && matches!(mode, Mode::Run | Mode::Show | Mode::ShowCompile | Mode::ShowIncdirs);
    let modules = if needs_modules {
        match crate::fortran::module_dir(&layout, &compiler) {
            Ok(d) => Some(d),
            Err(e) => return fail(e),
        }
    } else {
        None
    };
    let mut flags = Flags::new(&layout, modules.as_deref());
    if lang == Lang::Fortran {
        flags.options = fortran_options(&compiler, &args);
    }
    let print = |words: Vec<OsString>| {
        println!("{}", shell_line(&words));
        ExitCode::SUCCESS
    };
    match mode {
        Mode::Show => print(flags.command(&compiler, &args)),
        Mode::ShowCompile => print(flags.compile()),
        Mode::ShowLink => print(flags.link()),
        Mode::ShowIncdirs => print(flags.incdirs.clone()),
        Mode::ShowLibdirs => print(flags.libdirs.clone()),
        Mode::ShowLibs => print(flags.libs.clone()),
        Mode::Run | Mode::ShowHelp | Mode::ShowVersion => {
            if links(&args)
                && let Err(e) = layout.check_library()
            {
                return fail(e);
            }
            let cmd = flags.command(&compiler, &args);
            let err = Command::new(&cmd[0]).args(&cmd[1..]).exec();
            fail(format!(
                "cannot run {}: {err} (set {} to choose another compiler)",
                cmd[0].to_string_lossy(),
                lang.compiler_var()
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn modes_are_taken_out() {
        let (m, rest) = parse_mode(os(&["-show", "a.c", "-o", "a"]));
        assert_eq!(m, Mode::Show);
        assert_eq!(rest, os(&["a.c", "-o", "a"]));
        assert_eq!(parse_mode(os(&["--showme:link"])).0, Mode::ShowLink);
        assert_eq!(parse_mode(os(&["a.c"])).0, Mode::Run);
    }

    #[test]
    fn compile_only_has_no_link_flags() {
        assert!(links(&os(&["a.c", "-o", "a"])));
        assert!(!links(&os(&["-c", "a.c"])));
        assert!(!links(&os(&["-E", "a.c"])));
        assert!(links(&os(&["-MD", "a.c"])));
    }

    #[test]
    fn command_order() {
        let f =
            Flags { incdirs: os(&["/p/include"]), libdirs: os(&["/p/lib"]), libs: os(&["oxshmem"]), options: vec![] };
        assert_eq!(
            f.command(&os(&["cc"]), &os(&["a.c", "-o", "a"])),
            os(&["cc", "-I/p/include", "a.c", "-o", "a", "-L/p/lib", "-Wl,-rpath,/p/lib", "-loxshmem"])
        );
        assert_eq!(f.command(&os(&["cc"]), &os(&["-c", "a.c"])), os(&["cc", "-I/p/include", "-c", "a.c"]));
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote(OsStr::new("-I/a/b")), "-I/a/b");
        assert_eq!(shell_quote(OsStr::new("a b")), "'a b'");
        assert_eq!(shell_quote(OsStr::new("it's")), r"'it'\''s'");
        assert_eq!(shell_quote(OsStr::new("")), "''");
    }

    #[test]
    fn gfortran_10_and_later_allow_argument_mismatch() {
        let gf = vec![OsString::from("gfortran")];
        let have = Command::new("gfortran").arg("-dumpversion").output().ok();
        let major: Option<u32> =
            have.and_then(|o| String::from_utf8_lossy(&o.stdout).trim().split('.').next()?.parse().ok());
        let opts = fortran_options(&gf, &os(&["a.f"]));
        match major {
            Some(m) if m >= 10 => assert_eq!(opts, os(&["-fallow-argument-mismatch"])),
            _ => assert!(opts.is_empty()),
        }
        assert!(fortran_options(&gf, &os(&["-fno-allow-argument-mismatch", "a.f"])).is_empty());
        assert!(fortran_options(&[OsString::from("ifx")], &os(&["a.f"])).is_empty());
    }
}
