//! Checks of an annotated function: its shape ([`signature`]) and, for `#[spmd]`, its
//! communication ([`communication`]): the body is interpreted for every rank of every
//! checked world size, and the traces are matched (see `docs/static-checks.md`).

mod any_source;
mod describe;
mod interp;
pub(crate) mod macro_rules;
mod message;
mod package;
mod passes;
mod signature;
mod sim;
mod stuck;
mod trace;

pub use message::layout;
pub use signature::signature;

use interp::{MacroBody, Macros, Splits};
use package::{library_of, relative, PackageItems};
use passes::{check_size, reset_msg_budget, Items, Memo, SizeResult};
use std::collections::HashMap;
use syn::visit::Visit;
use syn::ItemFn;

/// Interpreter steps taken on this thread so far (for cost reports).
pub fn steps() -> u64 {
    interp::total_steps()
}

/// The larger sizes checked by default after 1..=8 (even and odd, powers of two and
/// not), each while the check's cost stays within [`SPREAD_STEPS`].
const SPREAD: [usize; 5] = [12, 16, 17, 32, 64];

/// The interpreter steps (all ranks, all sizes) within which the default check adds
/// larger sizes: one is checked only when the steps so far and the steps it is foreseen
/// to take ([`foreseen_steps`]) stay within this, so an entry point that is costly to
/// follow keeps its build fast, and `sizes = A..=B` asks for the sizes explicitly.
/// Deterministic (steps, not time).
const SPREAD_STEPS: u64 = 300_000;

/// The steps a check at size `n` is foreseen to take, from the last two sizes checked
/// (`seen`): their cost grown as `n^k`, with `k` measured between them and kept within
/// 1 (each rank does the same work) and 3 (each rank loops over every pair of ranks).
fn foreseen_steps(seen: &[(usize, u64)], n: usize) -> u64 {
    let [.., (n1, s1), (n2, s2)] = *seen else { return 0 };
    let k = if s1 > 0 && s2 > 0 && n2 > n1 {
        ((s2 as f64 / s1 as f64).ln() / (n2 as f64 / n1 as f64).ln()).clamp(1.0, 3.0)
    } else {
        2.0
    };
    (s2 as f64 * (n as f64 / n2 as f64).powf(k)) as u64
}

/// The world sizes checked: by default every size from 1 to 8 and a spread of larger
/// ones (see [`SPREAD`]); for `sizes = A..=B`,
/// every size when the range holds at most 64, else its first 8 sizes, each power of two
/// in it with its neighbours, and B.
pub fn sizes(range: Option<(usize, usize)>) -> Vec<usize> {
    let Some((a, b)) = range else { return (1..=8).chain(SPREAD).collect() };
    if b - a < 64 {
        return (a..=b).collect();
    }
    let mut v: Vec<usize> = (a..=a + 7).collect();
    let mut p = 1usize;
    while p <= b {
        v.extend([p - 1, p, p + 1].into_iter().filter(|&x| x >= a && x <= b && x > 0));
        p *= 2;
    }
    v.push(b);
    v.sort_unstable();
    v.dedup();
    v
}

/// A place in a source file: (line, column), as proc-macro2 reports them.
type Pos = (usize, usize);

/// What the check gave for one entry point.
pub struct Verdict {
    /// The problems found (spanned at the entry's own tokens), if any.
    pub errors: Option<syn::Error>,
    /// What the check could not follow, each at its construct (or at the call in the
    /// entry that leads there), with the world sizes it stopped at.
    pub unfollowed: Vec<Unfollowed>,
    /// The world sizes whose communication was proven, those the program does not
    /// support by design (a rank panics or returns `Err` on every run), and those left
    /// to the run-time checks.
    pub proven: Vec<usize>,
    pub unsupported: Vec<usize>,
    pub open: Vec<usize>,
    /// "src/main.rs", for reports.
    pub file: String,
}

/// A construct the check could not follow.
pub struct Unfollowed {
    /// The first and last tokens' spans in the entry.
    pub span: (proc_macro2::Span, proc_macro2::Span),
    /// The line of the construct in the entry's file.
    pub line: usize,
    /// What it is and why, naming its own file and line when it is in a helper.
    pub what: String,
    pub sizes: Vec<usize>,
}

/// What a check found, before its places are turned into the entry's tokens.
#[derive(Default)]
struct Raw {
    errors: Vec<(String, Pos, Pos)>,
    unfollowed: Vec<(String, Pos, Pos, Vec<usize>)>,
    proven: Vec<usize>,
    unsupported: Vec<usize>,
    open: Vec<usize>,
}

/// The first token's start and the last token's end of `ts`.
fn range_of(ts: &proc_macro2::TokenStream) -> (Pos, Pos) {
    let mut it = ts.clone().into_iter();
    let first = it.next();
    let last = it.last().or_else(|| first.clone());
    let p = |l: proc_macro2::LineColumn| (l.line, l.column);
    match (first, last) {
        (Some(a), Some(b)) => (p(a.span().start()), p(b.span().end())),
        _ => ((0, 0), (0, 0)),
    }
}

/// Checks the communication of `f` at the world sizes `sizes`. Reports the problems of
/// the smallest failing size. In `strict` mode, a size the check cannot decide is an
/// error naming the construct; otherwise it is left to the run-time checks, and the
/// verdict says what was not followed and where (the macro turns that into warnings).
///
/// Where the entry's file can be read, the check runs on that file as proc-macro2's
/// own lexer reads it (so the package's helpers, read from their files, carry their
/// lines too, and no token of two lexers is ever mixed), and the places it reports
/// are mapped back to the entry's tokens as the compiler gave them.
pub fn communication(f: &ItemFn, sizes: &[usize], strict: bool) -> Verdict {
    let source = SourceAccess::of(f);
    trace::set_lines_known(source.lines);
    let path = f.sig.ident.span().local_file().filter(|p| p.is_file() && source.file && source.lines);
    let entry_name = f.sig.ident.to_string();
    let file = path.as_deref().map(relative).unwrap_or_default();
    let tokens = Tokens::of(f);
    let raw = path.and_then(|path| {
        proc_macro2::fallback::force();
        let at = f.sig.ident.span().start();
        let mut items = PackageItems { entry_at: Some((at.line, at.column)), ..Default::default() };
        interp::reset_uses();
        interp::reset_aliases();
        macro_rules::reset();
        items.file(&path, &entry_name, 0);
        // A binary of a package with a library crate: the library's module tree too
        // (`use trainer::comms::ParallelState` in src/main.rs).
        let binary = path.file_stem().is_some_and(|s| s == "main") || path.parent().is_some_and(|p| p.ends_with("bin"));
        if let Some(lib) = library_of(&path).filter(|_| binary) {
            if lib != path {
                items.file(&lib, "", 0);
            }
        }
        items.finish();
        let raw = items.entry.take().map(|entry| {
            trace::set_files(trace::Files {
                entry: (relative(&path), entry_name.clone()),
                helpers: std::mem::take(&mut items.files),
            });
            check_entry(&entry, &items.fns, &items.consts, sizes, strict, &source)
        });
        proc_macro2::fallback::unforce();
        raw
    });
    let raw = raw.unwrap_or_else(|| {
        macro_rules::reset();
        trace::set_files(trace::Files { entry: (file.clone(), entry_name.clone()), ..Default::default() });
        check_entry(f, &HashMap::new(), &[], sizes, strict, &source)
    });
    // A construct not followed at a call that is an error at some size is not said as
    // well: the error says what is wrong there, and a warning beside it ("no world size
    // proven") would read as if the check had not looked.
    // (At the error's call, or at a place its message names: the root's other call.)
    // (`src/lib.rs:40`, not `other/src/lib.rs:40` or `src/lib.rs:401`.)
    // (In the message, not in the notes of the run that showed it, which name the
    // conditions it decided at their lines.)
    let names_at = |msg: &str, at: &str| {
        let msg = msg.split(" (when ").next().unwrap_or(msg);
        !at.is_empty()
            && msg.match_indices(at).any(|(i, _)| {
                !msg[i + at.len()..].starts_with(|c: char| c.is_ascii_digit())
                    && !msg[..i].ends_with(|c: char| c.is_alphanumeric() || "/_-.".contains(c))
            })
    };
    let names = |msg: &str, line: usize| !file.is_empty() && names_at(msg, &format!("{file}:{line}"));
    // (Inside a helper of another file every construct is placed at its call: there,
    // only an error that names the construct's own place hides it.)
    let in_helper = |what: &str| -> Option<String> {
        // (A place with its line: `src/halo.rs:15`, not "the call marked here" where
        // lines are not known.)
        let with_line =
            |p: &&str| p.rsplit_once(':').is_some_and(|(_, l)| !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()));
        message::place(what)
            .filter(with_line)
            .filter(|p| file.is_empty() || !p.starts_with(&format!("{file}:")))
            .map(String::from)
    };
    let in_error = |what: &str, a: Pos| match in_helper(what) {
        Some(p) => raw.errors.iter().any(|(msg, ..)| names_at(msg, &p)),
        None => raw.errors.iter().any(|(msg, ea, eb)| (*ea..=*eb).contains(&a) || ea.0 == a.0 || names(msg, a.0)),
    };
    let unfollowed: Vec<_> = raw.unfollowed.into_iter().filter(|u| !in_error(&u.0, u.1)).collect();
    // One error a call: what else went wrong at the same call is counted on the first.
    let mut at_call: Vec<(String, Pos, Pos, usize)> = Vec::new();
    for (msg, a, b) in raw.errors {
        let same =
            |e: &&mut (String, Pos, Pos, usize)| (e.1, e.2) == (a, b) && message::place(&e.0) == message::place(&msg);
        match at_call.iter_mut().find(same) {
            Some(e) => e.3 += 1,
            None => at_call.push((msg, a, b, 0)),
        }
    }
    let errors = at_call.into_iter().map(|(msg, a, b, more)| {
        let mut text = message::layout(&msg);
        if more > 0 {
            let s = if more == 1 { "" } else { "s" };
            text.push_str(&format!("\n(and {more} more problem{s} of this call at the same world size)"));
        }
        tokens.error(a, b, text)
    });
    let errors = errors.reduce(|mut a, b| {
        a.combine(b);
        a
    });
    let unfollowed = unfollowed
        .into_iter()
        .map(|(what, a, b, sizes)| Unfollowed { span: tokens.spans(a, b), line: a.0, what, sizes })
        .collect();
    Verdict { errors, unfollowed, proven: raw.proven, unsupported: raw.unsupported, open: raw.open, file }
}

/// The entry's tokens as the compiler gave them, by their place, so that a place the
/// check reports (read from the file by proc-macro2's lexer) becomes a span rustc shows.
struct Tokens {
    starts: HashMap<Pos, proc_macro2::Span>,
    ends: HashMap<Pos, proc_macro2::Span>,
    /// The function's name: where a place that matches no token is reported.
    name: proc_macro2::Span,
}

impl Tokens {
    fn of(f: &ItemFn) -> Tokens {
        fn walk(ts: proc_macro2::TokenStream, t: &mut Tokens) {
            let p = |l: proc_macro2::LineColumn| (l.line, l.column);
            for tt in ts {
                if let proc_macro2::TokenTree::Group(g) = &tt {
                    t.starts.entry(p(g.span_open().start())).or_insert(g.span_open());
                    t.ends.insert(p(g.span_close().end()), g.span_close());
                    walk(g.stream(), t);
                } else {
                    t.starts.entry(p(tt.span().start())).or_insert(tt.span());
                    t.ends.insert(p(tt.span().end()), tt.span());
                }
            }
        }
        let mut t = Tokens { starts: HashMap::new(), ends: HashMap::new(), name: f.sig.ident.span() };
        walk(quote::ToTokens::to_token_stream(f), &mut t);
        t
    }

    fn spans(&self, a: Pos, b: Pos) -> (proc_macro2::Span, proc_macro2::Span) {
        match self.starts.get(&a) {
            Some(&s) => (s, self.ends.get(&b).copied().unwrap_or(s)),
            None => (self.name, self.name),
        }
    }

    fn error(&self, a: Pos, b: Pos, msg: String) -> syn::Error {
        let (s, e) = self.spans(a, b);
        let mut first = proc_macro2::Punct::new('*', proc_macro2::Spacing::Alone);
        first.set_span(s);
        let mut last = first.clone();
        last.set_span(e);
        syn::Error::new_spanned(quote::quote!(#first #last), msg)
    }
}

/// The check of one entry (`f`, with the package's functions `file` and constants
/// `consts`), its places as (line, column).
fn check_entry(
    f: &ItemFn,
    file: &HashMap<String, ItemFn>,
    consts: &[interp::PackageConst],
    sizes: &[usize],
    strict: bool,
    source: &SourceAccess,
) -> Raw {
    interp::reset_caches();
    reset_msg_budget();
    interp::set_strict(strict);
    interp::set_written_fields(std::iter::once(("", f)).chain(file.iter().map(|(k, g)| (k.as_str(), g))));
    interp::note_package_fns(std::iter::once(("", f)).chain(file.iter().map(|(k, g)| (k.as_str(), g))));
    let start = interp::total_steps();
    let default = sizes.len() == 8 + SPREAD.len() && sizes[8..] == SPREAD;
    let mut macros = parse_macros(f);
    for g in file.values() {
        macros.extend(parse_macros(g));
    }
    let no_splits = Splits::new();
    let consts = interp::eval_consts(consts, &no_splits, &macros, file);
    let memo = std::rc::Rc::new(std::cell::RefCell::new(interp::Memo::default()));
    let mut raw = Raw::default();
    // The last two sizes checked and their steps, to foresee the next one's.
    let mut seen: Vec<(usize, u64)> = Vec::new();
    for &n in sizes {
        if default && n > 8 && interp::total_steps() - start + foreseen_steps(&seen, n) > SPREAD_STEPS {
            break;
        }
        let s0 = interp::total_steps();
        let res = check_size_for_inputs(f, n, &macros, file, &consts, &memo);
        seen.push((n, interp::total_steps() - s0));
        match res {
            SizeResult::Clean => raw.proven.push(n),
            SizeResult::Fails => raw.unsupported.push(n),
            SizeResult::Undecidable(at, what) => {
                let (a, b) = range_of(&at);
                if strict {
                    raw.errors.push((
                        format!(
                            "#[spmd(strict)]: the communication check cannot follow {what} (world size {n}); \
                             make it depend only on `rank()`, `size()`, constants and the program's inputs, or \
                             drop `strict` to leave it to the run-time checks{}",
                            source.note()
                        ),
                        a,
                        b,
                    ));
                    return raw;
                }
                raw.open.push(n);
                // (One entry a construct: at its span, and at its own place inside a
                // helper, where every construct shares the call's span.)
                match raw.unfollowed.iter_mut().find(|u| u.1 == a && message::place(&u.0) == message::place(&what)) {
                    Some(u) => u.3.push(n),
                    None => raw.unfollowed.push((what, a, b, vec![n])),
                }
            }
            SizeResult::Problems(errs) => {
                for e in errs {
                    for e in e {
                        let (a, b) = range_of(&e.to_compile_error());
                        raw.errors.push((e.to_string(), a, b));
                    }
                }
                return raw;
            }
        }
    }
    raw
}

/// The numbers a program reads from its inputs (arguments, environment, files) are
/// unknown but the same on every rank: each size is checked with such a number being
/// 1, and, when the program reads one, 2 and 3 too (a loop it counts runs once and
/// several times), and once more as run without command-line arguments (a parser's
/// defaults). Conditions on data the same on every rank (a residual reduced over all
/// ranks against a tolerance, a flag from the command line) are decided by one of
/// [`interp::AGREED_MODES`] in each run; when the program has one, every pattern is run
/// (the last, conditions met late, without command-line arguments: a training loop's
/// first 32 tests). A size is supported when one run gets through (the program's own
/// `assert!` may refuse some inputs). Problems say which run showed them, the first run
/// too, where it read inputs or decided conditions by pattern.
fn check_size_for_inputs<'a>(
    f: &'a ItemFn,
    n: usize,
    macros: &'a Macros,
    file: &'a HashMap<String, ItemFn>,
    consts: &HashMap<String, interp::V<'a>>,
    memo: &Memo,
) -> SizeResult {
    interp::set_uniform_sample(1);
    interp::set_agreed_mode(0);
    interp::reset_arms();
    let first = check_size(f, n, macros, file, consts, memo);
    let (read, decided) = (interp::read_uniform(), interp::decided_agreed());
    let first_after_ops = interp::failed_after_ops();
    if matches!(first, SizeResult::Problems(_)) {
        // (Said as for every later run: what the inputs and conditions were taken to be.)
        return with_run_note(first, read.then_some(1), decided.then_some(0));
    }
    if !(read || decided) {
        return first;
    }
    // A run the check could not follow leaves its size unproven, but another run that it
    // followed may still show a problem (the program's `--static` mode, where its
    // dynamic mode's peers come from `recv_any`): every run is made, and a problem any
    // run shows comes first.
    let (first, mut undecided) = match first {
        u @ SizeResult::Undecidable(..) => (SizeResult::Fails, Some(u)),
        r => (r, None),
    };
    // Sample 0: the program run without command-line arguments (its parser's defaults).
    // (A first run that failed, e.g. refused by the program's own check of its inputs,
    // may have stopped before any such condition: the other samples run every pattern.)
    let runs: &[(i128, u8)] = if decided {
        &[(2, 1), (3, 2), (1, 3), (0, 0), (0, LATE_MET)]
    } else if matches!(first, SizeResult::Fails) {
        &[(2, 0), (3, 1), (2, 2), (3, 3), (0, 0)]
    } else {
        &[(2, 0), (3, 0), (0, 0)]
    };
    let mut clean = matches!(first, SizeResult::Clean);
    // Whether a run that failed had decided conditions on data by pattern (a loop on a
    // residual, a result compared with a serial reference): its failure is the path the
    // check chose, not the program refusing the size.
    let mut failed_after_deciding = matches!(first, SizeResult::Fails) && decided && first_after_ops;
    // Conditions met late run a counted loop's many steps (from a parser's
    // defaults): at sizes 2 and 3 only, where what one rank does at step 25 shows as
    // well as at any other size, and the cost stays a fraction of the check's.
    let runs_all: Vec<(i128, u8)> =
        runs.iter().copied().filter(|&(_, mode)| mode != LATE_MET || (2..=LATE_MET_SIZES).contains(&n)).collect();
    let steps_before = interp::total_steps();
    for &(sample, mode) in &runs_all {
        interp::set_uniform_sample(sample);
        interp::set_agreed_mode(mode);
        match check_size(f, n, macros, file, consts, memo) {
            r @ SizeResult::Problems(_) => {
                let (read, decided) = (interp::read_uniform(), interp::decided_agreed());
                return with_run_note(r, read.then_some(sample), decided.then_some(mode));
            }
            u @ SizeResult::Undecidable(..) => {
                undecided.get_or_insert(u);
            }
            SizeResult::Clean => clean = true,
            SizeResult::Fails => failed_after_deciding |= interp::decided_agreed() && interp::failed_after_ops(),
        }
    }
    if decided && n == 2 {
        if let Some(r) = late_inputs_run(f, n, (macros, file, consts, memo), interp::total_steps() - steps_before) {
            return r;
        }
    }
    // A `match` on an input (a parser's flags) with arms no run took: runs again with
    // the arms shifted, until each was taken (or the offsets run out).
    match shifted_arms(f, n, (macros, file, consts, memo)) {
        (Some(r), _, _) => return r,
        (None, c, d) => (clean, failed_after_deciding) = (clean || c, failed_after_deciding || d),
    }
    if let Some(u) = undecided {
        return u;
    }
    // Every run failed on a check of the program's own after the check picked how a
    // condition went (its residual loop run once, its result compared with a serial
    // reference): the same runs again, with such checks taken to pass.
    if !clean && failed_after_deciding {
        interp::set_assume_checks_pass(true);
        let before = interp::spent();
        let assumed = assuming_checks_pass(f, n, (macros, file, consts, memo), runs_all);
        interp::restore_spent(before);
        interp::set_assume_checks_pass(false);
        if let Some(r) = assumed {
            return r;
        }
    }
    // Every run refused by the program, which read its inputs: numbers as small as the
    // samples may be what it refuses at this size (`--nx` below the ranks, a grid too
    // small for the process grid), not the size. Numbers past the size, and not a
    // multiple of any of its factors (blocks of unequal lengths), are tried before the
    // size is taken as one the program does not support.
    if !clean && !failed_after_deciding && read {
        match past_the_size(f, n, (macros, file, consts, memo)) {
            Some(SizeResult::Clean) => clean = true,
            Some(r) => return r,
            None => {}
        }
    }
    // A size the program refuses for some inputs (its own `assert!` on `--nx` against
    // the grid) and runs for others is supported.
    if clean {
        SizeResult::Clean
    } else if failed_after_deciding {
        every_pick_failed(f)
    } else {
        SizeResult::Fails
    }
}

/// The verdict where every run failed on the program's own check after the check picked
/// how conditions on agreed data went: a construct not followed, named at the entry.
fn every_pick_failed(f: &ItemFn) -> SizeResult {
    // (Never taken for a size the program does not support: said, and left to
    // the run-time checks.)
    SizeResult::Undecidable(
        quote::quote_spanned!(f.sig.ident.span() => #f),
        "the program's own error or panic on every path the check took (it picks how conditions on data \
         the same on every rank go, a loop on a residual or a result compared with a reference, and every \
         pick ended there)"
            .into(),
    )
}

/// Runs with the arms of `match`es on inputs shifted by one more each time, while some
/// arm was never taken (up to [`ARM_OFFSETS`]): the first problem found (noted), and
/// whether a run got through and whether one failed after deciding conditions by
/// pattern.
fn shifted_arms(f: &ItemFn, n: usize, items: Items<'_, '_>) -> (Option<SizeResult>, bool, bool) {
    let (macros, file, consts, memo) = items;
    let (mut clean, mut failed_after_deciding) = (false, false);
    let mut offset = 0;
    let (before, msg_before) = (interp::spent(), passes::msg_budget());
    let mut found = None;
    'runs: while interp::arms_left() && offset < ARM_OFFSETS {
        offset += 1;
        interp::set_arm_offset(offset);
        for &(sample, mode) in &[(1, 0), (2, 1)] {
            interp::set_uniform_sample(sample);
            interp::set_agreed_mode(mode);
            match check_size(f, n, macros, file, consts, memo) {
                r @ SizeResult::Problems(_) => {
                    let (read, decided) = (interp::read_uniform(), interp::decided_agreed());
                    found = Some(with_arm_note(with_run_note(r, read.then_some(sample), decided.then_some(mode))));
                    break 'runs;
                }
                SizeResult::Clean => clean = true,
                SizeResult::Fails => failed_after_deciding |= interp::decided_agreed() && interp::failed_after_ops(),
                SizeResult::Undecidable(..) => {}
            }
        }
    }
    interp::set_arm_offset(0);
    interp::restore_spent(before);
    passes::restore_msg_budget(msg_before);
    (found, clean, failed_after_deciding)
}

/// The runs of [`check_size_for_inputs`] (each an inputs' sample and a pattern) again,
/// taking the program's own checks to pass once a rank decided a condition by pattern:
/// problems found are reported with a note saying so; `Some(Clean)` when a run gets
/// through and none shows a problem, `None` when every run still fails or none took a
/// check to pass.
fn assuming_checks_pass(f: &ItemFn, n: usize, items: Items<'_, '_>, runs: Vec<(i128, u8)>) -> Option<SizeResult> {
    let (macros, file, consts, memo) = items;
    let mut clean = false;
    for (sample, mode) in runs.into_iter().chain([(1, 0)]) {
        interp::set_uniform_sample(sample);
        interp::set_agreed_mode(mode);
        match check_size(f, n, macros, file, consts, memo) {
            SizeResult::Problems(errs) if interp::assumed_checks() => {
                let (read, decided) = (interp::read_uniform(), interp::decided_agreed());
                let note = "when the program's own check of its results passes: the check picked how a condition \
                            on data the same on every rank went, and on that path the program's check failed";
                let errs = errs.into_iter().map(|e| syn::Error::new(e.span(), format!("{e} ({note})"))).collect();
                return Some(with_run_note(
                    SizeResult::Problems(errs),
                    read.then_some(sample),
                    decided.then_some(mode),
                ));
            }
            SizeResult::Clean => clean = true,
            _ => {}
        }
    }
    clean.then_some(SizeResult::Clean)
}

/// One more run at size 2, with conditions on data the same on every rank met late and
/// the inputs' numbers past that ([`LATE_SAMPLE`]): a loop counted by `--iters` runs
/// until they are met, with the program's flags on (`-v` and a solver's logging at its
/// 10th iteration: what the parser's defaults alone leave off). An extra run, bounded by
/// the steps the size's runs took so far (`spent`), judged by the ranks' paths alone
/// ([`sim::set_paths_only`]): only a problem of paths it shows counts, noted.
fn late_inputs_run(f: &ItemFn, n: usize, items: Items<'_, '_>, spent: u64) -> Option<SizeResult> {
    let (macros, file, consts, memo) = items;
    let (before, msg_before) = (interp::spent(), passes::msg_budget());
    interp::set_uniform_sample(LATE_SAMPLE);
    interp::set_agreed_mode(LATE_MET);
    interp::set_step_ceiling(interp::total_steps() + spent.max(LATE_STEPS));
    sim::set_paths_only(true);
    let found = sim::path_problems();
    let r = check_size(f, n, macros, file, consts, memo);
    // (Not where ranks went different ways at a condition on their own data: with
    // numbers this large, a quiet helper the others follow whole is summarised, and
    // data the same on every rank may look like each rank's own.)
    let paths = sim::path_problems() > found && interp::local_verdict().note.is_none();
    sim::set_paths_only(false);
    interp::set_step_ceiling(u64::MAX);
    interp::restore_spent(before);
    passes::restore_msg_budget(msg_before);
    match r {
        r @ SizeResult::Problems(_) if paths => {
            let (read, decided) = (interp::read_uniform(), interp::decided_agreed());
            Some(with_run_note(r, read.then_some(LATE_SAMPLE), decided.then_some(LATE_MET)))
        }
        _ => None,
    }
}

/// The fewest steps [`late_inputs_run`] may take, whatever the runs before it took.
const LATE_STEPS: u64 = 200_000;

/// More runs, each with the arms of `match`es on inputs shifted by one more, while
/// some arm was never taken (a parser with more flags than the patterns reach).
const ARM_OFFSETS: usize = 8;

/// The runs of [`grown_samples`] at size `n`, every one made: a problem any shows (with the
/// number that showed it) first, else clean where one got through, else a construct not
/// followed; `None` where the program refuses them all too.
fn past_the_size(f: &ItemFn, n: usize, items: Items<'_, '_>) -> Option<SizeResult> {
    let (macros, file, consts, memo) = items;
    let before = interp::spent();
    let mut out: Option<SizeResult> = None;
    for (sample, mode) in grown_samples(n) {
        // (A second pattern only where the run before decided conditions by one.)
        if mode != 0 && !interp::decided_agreed() {
            continue;
        }
        interp::set_uniform_sample(sample);
        interp::set_agreed_mode(mode);
        match check_size(f, n, macros, file, consts, memo) {
            r @ SizeResult::Problems(_) => {
                out = Some(with_run_note(r, Some(sample), interp::decided_agreed().then_some(mode)));
                break;
            }
            SizeResult::Fails => {}
            r @ SizeResult::Clean => out = Some(r),
            u @ SizeResult::Undecidable(..) => {
                out.get_or_insert(u);
            }
        }
    }
    interp::restore_spent(before);
    out
}

/// The inputs' samples tried at world size `n` where every run with the usual ones was
/// refused by the program ([`check_size_for_inputs`]): `n + 1` and `2n + 1`, past the
/// size and prime to it (every factor of the size leaves a remainder: the blocks of a
/// process grid come out unequal); `n + 1` a second time with conditions on agreed data
/// going the other way (run only where the first decided one), numbers up to 3 left out.
fn grown_samples(n: usize) -> Vec<(i128, u8)> {
    let n = n as i128;
    // (Numbers up to 3 were the usual samples.)
    [(n + 1, 0), (n + 1, 1), (2 * n + 1, 0)].into_iter().filter(|&(s, _)| s > 3).collect()
}

/// Problems found in a run whose `match`es on inputs took shifted arms say so.
fn with_arm_note(r: SizeResult) -> SizeResult {
    let SizeResult::Problems(errs) = r else { return r };
    let note = "when a `match` on a value read from the program's inputs (a parser's flags) takes another of its arms";
    SizeResult::Problems(errs.into_iter().map(|e| syn::Error::new(e.span(), format!("{e} ({note})"))).collect())
}

/// The pattern of [`interp::AGREED_MODES`] where conditions on data the same on every
/// rank are met late, and the largest world size it runs at.
const LATE_MET: u8 = 4;
const LATE_MET_SIZES: usize = 3;

/// The inputs' numbers in the run with conditions met late and inputs read: past the
/// tests the pattern fails first, so that loops they count run until those are met.
const LATE_SAMPLE: i128 = 34;

/// Problems found in a run with inputs' numbers `sample` and pattern `mode` say so.
fn with_run_note(r: SizeResult, sample: Option<i128>, mode: Option<u8>) -> SizeResult {
    let SizeResult::Problems(errs) = r else { return r };
    let mut notes = Vec::new();
    match sample {
        Some(0) => notes.push("when the program is run without command-line arguments".to_string()),
        Some(sample) => notes.push(format!(
            "when a number the program reads from its arguments, environment or files is {sample}: \
             the check takes it to be the same on every rank"
        )),
        None => {}
    }
    if let Some(mode) = mode {
        // (Named where the run noted them: the conditions it decided by its pattern.)
        let (conds, more, flags) = interp::decided_conditions();
        for (text, on) in &flags {
            // (`batched`: the flag itself; `verbose && rank == 0 && it % 10 == 0`: a
            // flag with what this rank knows.)
            let code = text.split('`').nth(1).unwrap_or_default();
            notes.push(match code.contains("&&") || code.contains("||") {
                true => format!(
                    "when {text} is {} wherever what else it tests holds (it tests a value read from the \
                     program's inputs: a flag, the same on every rank all run long)",
                    if *on { "taken" } else { "not taken" }
                ),
                false => format!(
                    "when {text}, read from the program's inputs, is {on} (a flag: the same on every rank all run long)"
                ),
            });
        }
        let which = if conds.is_empty() {
            "(a value reduced over all ranks, a flag from the command line)".to_string()
        } else {
            format!("({}{})", conds.join(", "), if more { ", …" } else { "" })
        };
        // (Flags alone: the pattern matters where it kept loops going, met late.)
        if !conds.is_empty() || flags.is_empty() || mode == LATE_MET {
            notes.push(format!(
                "when each condition on data the same on every rank {which} is {}: every rank takes the same branch",
                interp::AGREED_MODES[mode as usize]
            ));
        }
    }
    if notes.is_empty() {
        return SizeResult::Problems(errs);
    }
    let note = format!(" ({})", notes.join("; "));
    SizeResult::Problems(errs.into_iter().map(|e| syn::Error::new(e.span(), format!("{e}{note}"))).collect())
}

/// What this compiler front-end lets a macro see of the source. rustc gives the file
/// and line numbers; rust-analyzer gives neither (every span says line 1, and there is
/// no file to read), so the IDE must not print wrong lines, and must say that it could
/// not see the file's constants and helpers rather than silently judge without them.
struct SourceAccess {
    /// The file holding `f` can be read (for its constants and helper functions).
    file: bool,
    /// Spans carry real line numbers.
    lines: bool,
}

impl SourceAccess {
    fn of(f: &ItemFn) -> SourceAccess {
        let file = f.sig.ident.span().local_file().is_some_and(|p| p.is_file());
        // Real positions: the closing brace sits after the `fn` keyword (a function on
        // one line has them on one line, but then its columns differ).
        let open = f.sig.fn_token.span.start();
        let close = f.block.brace_token.span.close().end();
        let lines = open.line >= 1 && (close.line > open.line || close.column > open.column);
        SourceAccess { file, lines }
    }

    /// Appended to verdicts that the unseen file could change.
    fn note(&self) -> &'static str {
        if self.file {
            ""
        } else {
            " (note: this front-end, e.g. rust-analyzer, does not let macros read the source file, so the \
             file's constants and helper functions were not seen here; `cargo build` sees them and may decide)"
        }
    }
}

/// Parses the body of every macro in `f` (and in those bodies) as comma-separated
/// expressions or `x; n`, so `println!`, `assert!` and `vec!` arguments are evaluated too.
fn parse_macros(f: &ItemFn) -> Macros {
    type Args = syn::punctuated::Punctuated<syn::Expr, syn::Token![,]>;
    #[derive(Default)]
    struct Collect(Vec<(usize, Box<MacroBody>)>);
    impl<'ast> Visit<'ast> for Collect {
        fn visit_item_macro(&mut self, m: &'ast syn::ItemMacro) {
            // A `macro_rules!` inside a function: defined from here on.
            macro_rules::define(m);
        }
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            if let Some(b) = macro_rules::expansion(m) {
                self.0.push((m as *const syn::Macro as usize, Box::new(MacroBody::Expanded(b))));
                return;
            }
            let repeat = |input: syn::parse::ParseStream| -> syn::Result<MacroBody> {
                let x: syn::Expr = input.parse()?;
                input.parse::<syn::Token![;]>()?;
                Ok(MacroBody::Repeat(Box::new(x), Box::new(input.parse()?)))
            };
            let body =
                m.parse_body_with(repeat).or_else(|_| m.parse_body_with(Args::parse_terminated).map(MacroBody::Args));
            if let Ok(b) = body {
                self.0.push((m as *const syn::Macro as usize, Box::new(b)));
            }
        }
    }
    let mut out = Macros::new();
    let mut round = Collect::default();
    round.visit_item_fn(f);
    // (Macros expanding to macro calls: as deep as rustc's default recursion limit.)
    let mut depth = 0;
    while !round.0.is_empty() && depth < macro_rules::EXPANSION_DEPTH {
        depth += 1;
        let mut next = Collect::default();
        for (_, body) in &round.0 {
            match &**body {
                MacroBody::Args(args) => args.iter().for_each(|e| next.visit_expr(e)),
                MacroBody::Repeat(x, k) => {
                    next.visit_expr(x);
                    next.visit_expr(k);
                }
                MacroBody::Expanded(b) => next.visit_block(b),
            }
        }
        // The boxes move into the map; the macros inside them stay where they are.
        out.extend(round.0);
        round = next;
    }
    out
}

#[cfg(test)]
mod tests;
