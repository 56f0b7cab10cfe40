//! An interpreter of an `#[spmd]` body for one rank of one world size.
//!
//! It evaluates what the communication pattern depends on (ranks, sizes, integer
//! arithmetic, control flow) and records each communication call as an [`Ev`]. Data
//! (buffers, floats, I/O) is opaque: it is carried as [`V::Opaque`] and never decides
//! anything. When something that communicates depends on an opaque value, the rank's
//! run stops with [`Stop::Undecidable`] and that world size is left to the run-time
//! checks.
//!
//! Files: `eval/` (the recursive core, one file per kind of syntax), `std_methods.rs`
//! (method calls), `lists.rs` (methods of lists and iterators), `collections.rs` (maps
//! and sets), `options.rs` (`Option` and `Result`), `numbers.rs` (methods of numbers),
//! `macros.rs` (`vec!`, `assert!`, `println!` and the like), `model.rs` (what each
//! communication call posts), `groups.rs` (communicators and how they are made),
//! `value.rs` (values and flow), `summary.rs` (summarising code that cannot
//! communicate), `memo.rs` (quiet helpers' results remembered), `scopes.rs`
//! (variables), `elem.rs` (buffers' element types, for reduce ops), `counts.rs` (what an
//! `all_to_all` delivered, named by its sender, for `all_to_all_v`'s counts), `forms.rs`
//! (lengths and counts computed from data, as linear forms of that data), `local.rs`
//! (conditions on data that may differ from rank to rank), `arms.rs` (which arms of a
//! `match` on an input each run takes), `dispatch.rs` (methods of the package's own,
//! called on values), `long.rs` (buffers too long to hold item by item), `messages.rs`
//! (what point-to-point messages carry), `receivers.rs` (which calls named like a
//! communicator's ops may be one), `uses.rs` (the package's `use` declarations, by
//! module), `written.rs` (which fields of the package's structs its code writes),
//! `iterators.rs` (the package's own iterators).

mod arms;
mod call_args;
mod collections;
mod counts;
use arms::{arm_offset, arm_pick};
pub use arms::{arms_left, arms_taken, reset_arms, restore_arms, set_arm_offset};
pub use collections::{note_alias, note_field_type, reset_aliases};
pub use counts::{exact, resolve, sent_in, sent_known_of, set_sent_known, SentKnown};
pub use local::{first_local_decision, local_data_differs, local_verdict, reset_local, LocalVerdict};
use local::{local_decision, local_enabled, local_stop};
pub use messages::{any_sent_p2p, same_sent_p2p, set_guessing, set_messages, set_sent_p2p, take_guessed, SentP2p};
pub use receivers::note_package_fns;
pub(crate) use summary::{restore_spent, spent};
mod dispatch;
mod elem;
mod eval;
mod forms;
pub use forms::{of_count, provably_differ};
mod groups;
mod iterators;
mod lists;
mod local;
mod long;
mod macros;
mod memo;
mod messages;
mod model;
mod numbers;
mod options;
mod receivers;
mod scopes;
mod std_methods;
mod summary;
mod uses;
mod value;
mod written;
pub use written::set_written_fields;
use written::{field_own_resized, field_resized, field_written, reads_receiver};

/// Forgets every cache the interpreter keeps by syntax address (at the start of each
/// check: another entry point's syntax may reuse the addresses).
pub fn reset_caches() {
    counts::reset();
    forms::reset();
    groups::reset_partitions();
    std_methods::reset_composed();
    summary::reset();
    elem::reset();
    scopes::reset();
    value::reset_exact();
}

use collections::Coll;
use eval::{agree, mut_loan_places, mut_loans, place_root};
pub use groups::CommInst;
pub use groups::{SplitSeen, Splits};
use model::mentions_comm;
pub use uses::{note_use, reset_uses};
use value::*;
pub use value::{MacroBody, Macros, Outcome, Stop, V};

use super::trace::{self, call_name, Ev, Site};
use quote::ToTokens;
use std::collections::HashMap;
use syn::{Expr, FnArg, ItemFn};

thread_local! {
    static TOTAL_STEPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// [`total_steps`] past which ranks stop ([`set_step_ceiling`]).
    static CEILING: std::cell::Cell<u64> = const { std::cell::Cell::new(u64::MAX) };
    /// The value a number read from the program's inputs takes in this run (see
    /// [`V::Uniform`]), and whether any rank read one.
    static UNIFORM: std::cell::Cell<(i128, bool)> = const { std::cell::Cell::new((1, false)) };
    /// Whether this run took the sample for a value computed from the inputs in a way
    /// the check did not follow (a command line summarised whole, `cfg.bins` after the
    /// parser's `next_power_of_two()`): a guess, which a value the program can never
    /// hold may contradict.
    static GUESSED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

thread_local! {
    /// Whether the code run since the last [`swap_touched_input`] read the program's
    /// inputs at all (a command line, an environment variable, a file).
    static TOUCHED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

thread_local! {
    /// Whether the entry being checked is `#[spmd(strict)]`.
    static STRICT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Sets whether the entry being checked is `strict`: there, a root or reduce op that
/// depends on data is an error naming what it depends on at once; elsewhere it is a
/// construct not followed once the rest of the world size shows no problem
/// (`Interp::unproven_agreement`).
pub fn set_strict(s: bool) {
    STRICT.with(|c| c.set(s));
}

pub(crate) fn strict() -> bool {
    STRICT.with(|c| c.get())
}

/// Whether the code run since the last [`swap_touched_input`] read an input.
pub(super) fn touched_input() -> bool {
    TOUCHED.with(|c| c.get())
}

/// Sets whether an input was touched; returns what it was.
pub(super) fn swap_touched_input(t: bool) -> bool {
    TOUCHED.with(|c| c.replace(t))
}

/// Runs the ranks as if every number the program reads from its inputs (arguments,
/// environment, files: the same on every rank under the launcher) were `sample`.
pub fn set_uniform_sample(sample: i128) {
    UNIFORM.with(|u| u.set((sample, false)));
    GUESSED.with(|g| g.set(false));
}

/// Whether this run guessed a value from the inputs (see `GUESSED`).
pub(super) fn guessed_input() -> bool {
    GUESSED.with(|g| g.get())
}

/// A number parsed from the program's inputs themselves (`args[1].parse()`): this run's
/// sample, a value the user may pass (not a guess).
pub(super) fn parsed_input() -> i128 {
    UNIFORM.with(|u| {
        let (s, _) = u.get();
        u.set((s, true));
        // Sample 0 is the run without command-line arguments; other inputs take 1 there.
        s.max(1)
    })
}

/// Whether a rank read such an input since [`set_uniform_sample`].
pub fn read_uniform() -> bool {
    UNIFORM.with(|u| u.get().1)
}

/// Sets whether an input was read (see [`read_uniform`]); returns what it was.
pub(super) fn swap_read_uniform(read: bool) -> bool {
    UNIFORM.with(|u| {
        let (s, was) = u.get();
        u.set((s, read));
        was
    })
}

/// The sample the program's input numbers take in this run.
pub(super) fn uniform_sample() -> i128 {
    UNIFORM.with(|u| u.get().0)
}

/// This run's sample for a value computed from the inputs in a way the check did not follow (a guess: see `GUESSED`).
pub(super) fn uniform_number() -> i128 {
    GUESSED.with(|g| g.set(true));
    parsed_input()
}

/// Whether this run is the one without command-line arguments (`std::env::args()` is
/// the program's name alone, so a parser leaves its defaults).
pub(super) fn no_arguments() -> bool {
    UNIFORM.with(|u| u.get().0 == 0)
}

/// Notes that the run read an input (see [`read_uniform`]).
pub(super) fn note_read_uniform() {
    UNIFORM.with(|u| {
        let (s, _) = u.get();
        u.set((s, true));
    })
}

thread_local! {
    /// How this run decides conditions on values the same on every rank
    /// ([`V::Agreed`]), and whether any rank decided one.
    static AGREED: std::cell::Cell<(u8, bool)> = const { std::cell::Cell::new((0, false)) };
}

/// The patterns a condition on a value the same on every rank (a reduced residual
/// against a tolerance, a flag from the command line) takes, by the times the same
/// condition was met before in the rank's run: every rank takes the same branch, and
/// each pattern is one way a real run may go. A loop that tests one runs once, twice or
/// not at all; an early `break` on one comes at the first, second or third test, or
/// late (a run that does not converge soon goes through [`LATE`] tests first, so what a
/// counted training loop does only at step 25 is checked too; a `loop` that ends only on
/// such a test still ends).
pub const AGREED_MODES: [&str; 5] = [
    "true the first time, false after",
    "true the first two times, false after",
    "false the first time, true after",
    "false the first two times, true after",
    "false the first 32 times, true after",
];

/// The tests a condition on data the same on every rank fails before it holds, in the
/// last pattern of [`AGREED_MODES`].
const LATE: u32 = 32;

thread_local! {
    /// Decisions by pattern taken on this thread (each rank counts its own from where it
    /// started), and whether runs take the program's own checks to pass after one.
    static DECISIONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static ASSUME: std::cell::Cell<(bool, bool)> = const { std::cell::Cell::new((false, false)) };
}

/// Whether this run takes the program's own checks to pass once its rank has decided a
/// condition by pattern ([`Interp::assumes_checks_pass`]), and clears [`assumed_checks`].
pub fn set_assume_checks_pass(on: bool) {
    ASSUME.with(|a| a.set((on, false)));
}

/// Whether a rank of this run took one of the program's own checks to pass.
pub fn assumed_checks() -> bool {
    ASSUME.with(|a| a.get().1)
}

fn note_decision() {
    DECISIONS.with(|d| d.set(d.get() + 1));
}

/// Sets this run's pattern (an index into [`AGREED_MODES`]) and clears [`decided_agreed`].
pub fn set_agreed_mode(mode: u8) {
    AGREED.with(|a| a.set((mode, false)));
    FAILED_AFTER_OPS.with(|f| f.set(false));
    DECIDED_CONDS.with(|d| d.borrow_mut().clear());
}

thread_local! {
    /// The conditions decided by the run's pattern since [`set_agreed_mode`] (where a
    /// branch communicates), each once, as the notes of a problem name them: the site,
    /// then `` `residual < tol` at src/solver.rs:41 ``.
    static DECIDED_CONDS: std::cell::RefCell<Vec<(usize, String)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// How many decided conditions a note names.
const CONDS_NAMED: usize = 3;

/// The conditions this run decided by its pattern (at most [`CONDS_NAMED`], and
/// whether there were more).
/// Those that are flags read from the program's inputs come apart, each with the way it
/// was decided (the same at every test: [`input_decision`]).
pub fn decided_conditions() -> (Vec<String>, bool, Vec<(String, bool)>) {
    DECIDED_CONDS.with(|d| {
        let d = d.borrow();
        let flag = |t: &str| t.strip_prefix(INPUT_MARK).map(|rest| (rest[1..].to_string(), rest.starts_with('1')));
        let inputs = d.iter().filter_map(|(_, t)| flag(t)).collect();
        let pattern: Vec<&String> = d.iter().map(|(_, t)| t).filter(|t| flag(t).is_none()).collect();
        (pattern.iter().take(CONDS_NAMED).map(|t| t.to_string()).collect(), pattern.len() > CONDS_NAMED, inputs)
    })
}

/// Marks a decided condition's text as a flag of the inputs (then '1' or '0': how it went).
const INPUT_MARK: char = '\u{1}';

/// Notes the condition at `site` as decided by the run's pattern (its text rendered
/// the first time only).
fn note_decided_condition(site: usize, text: impl FnOnce() -> String) {
    DECIDED_CONDS.with(|d| {
        let mut d = d.borrow_mut();
        if d.len() <= CONDS_NAMED && !d.iter().any(|(s, _)| *s == site) {
            d.push((site, text()));
        }
    })
}

thread_local! {
    /// Whether a rank of this run failed after it communicated ([`Interp::run`]).
    static FAILED_AFTER_OPS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a rank failed, since [`set_agreed_mode`], after its first op: a failure the
/// program's own check of its results may make on the path the check picked. A check of
/// the world size or the inputs before the first op refuses the size for real.
pub fn failed_after_ops() -> bool {
    FAILED_AFTER_OPS.with(|f| f.get())
}

/// Whether a rank decided such a condition since [`set_agreed_mode`].
pub fn decided_agreed() -> bool {
    AGREED.with(|a| a.get().1)
}

/// Sets whether a condition was decided by the run's pattern ([`decided_agreed`]).
pub fn set_decided_agreed(d: bool) {
    AGREED.with(|a| a.set((a.get().0, d)));
}

/// The `j`th decision (from 0) of one condition under this run's pattern.
fn agreed_decision(j: u32) -> bool {
    note_decision();
    AGREED.with(|a| {
        let (mode, _) = a.get();
        a.set((mode, true));
        match mode {
            0 => j < 1,
            1 => j < 2,
            2 => j >= 1,
            3 => j >= 2,
            _ => j >= LATE,
        }
    })
}

/// The decision of a condition that is a value read from the program's inputs as a
/// whole (`cfg.verbose`, `cfg.verbose && rank == 0` where the rest holds): the same at
/// every test in a run, as the program's flag is, whatever the run's pattern does with
/// conditions on data that change (a residual): taken in the patterns that take such
/// conditions first (and met late: `-v` with a solver's 10th iteration's logging),
/// not in the others. The condition's note at `site` says so.
pub(super) fn input_decision(site: usize) -> bool {
    note_decision();
    let on = AGREED.with(|a| {
        let (mode, _) = a.get();
        a.set((mode, true));
        !matches!(mode, 2 | 3)
    });
    DECIDED_CONDS.with(|d| {
        if let Some((_, text)) = d.borrow_mut().iter_mut().find(|(s, _)| *s == site) {
            if !text.starts_with(INPUT_MARK) {
                *text = format!("{INPUT_MARK}{}{text}", u8::from(on));
            }
        }
    });
    on
}

/// Whether a `while` loop whose condition the check decides by this run's pattern runs
/// its body at the `k`th test of its `entry`th entry: once per entry, twice per entry,
/// not at the first entry and once after, not at the first entry and twice after, and
/// (with conditions false every time) three times per entry (a loop on a converged
/// residual runs a bounded number of times, never until the step budget).
pub(super) fn loop_decision(entry: u32, k: u32) -> bool {
    note_decision();
    AGREED.with(|a| {
        let (mode, _) = a.get();
        a.set((mode, true));
        let trips = match mode {
            0 => 1,
            1 => 2,
            2 => u32::from(entry > 0),
            3 => 2 * u32::from(entry > 0),
            _ => 3,
        };
        k < trips
    })
}

/// This run's pattern, for the memo of quiet helpers (which may decide such conditions).
pub(super) fn agreed_mode() -> u8 {
    AGREED.with(|a| a.get().0)
}

/// Evaluation steps taken by every rank on this thread so far (the check's cost).
pub fn total_steps() -> u64 {
    TOTAL_STEPS.with(|t| t.get())
}

/// Stops every rank run from now on once [`total_steps`] passes `at` (`u64::MAX`: never):
/// the bound of an attempt that may be given up.
pub fn set_step_ceiling(at: u64) {
    CEILING.with(|c| c.set(at));
}

/// Evaluation steps one rank may take before the check gives up on that size.
const STEP_BUDGET: u64 = 2_000_000;

/// Iterations a `while`/`loop` may take.
const LOOP_BOUND: u64 = 100_000;

/// Longest list the interpreter materialises (ranges over ranks, peers, microbatches).
const LIST_BOUND: i128 = 1 << 16;

/// A fast hash for the interpreter's own tables (variable names, syntax-node addresses):
/// FxHash's multiply-rotate, where SipHash's DoS resistance buys nothing.
#[derive(Default, Clone, Copy)]
pub struct Fx(u64);

impl std::hash::Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(w));
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map on [`Fx`].
pub type FxMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<Fx>>;

/// What broadcasts' roots held in one pass, by communicator key and collective count.
pub type Roots<'a> = std::rc::Rc<std::cell::RefCell<FxMap<(String, u64), V<'a>>>>;

pub struct Interp<'a> {
    pub rank: usize,
    pub size: usize,
    scopes: scopes::Scopes<'a>,
    pub comms: Vec<CommInst>,
    pub events: Vec<Ev<'a>>,
    /// The collective this rank's run ended at as invalid (its own buffers refused), kept
    /// out of `events`: only the comparison of roots and counts reads it (`sim::roots_or_counts_differ`).
    pub invalid_call: Option<Ev<'a>>,
    next_id: usize,
    fns: HashMap<String, &'a ItemFn>,
    /// Free functions of the same source file, checked inline when called.
    file_fns: &'a HashMap<String, ItemFn>,
    /// Values of the `const` items of the same source file (`STEPS`, `ACT`).
    consts: HashMap<String, V<'a>>,
    /// The same, by interned name.
    const_syms: FxMap<scopes::Sym, V<'a>>,
    /// Calls into the package's helpers under way, outermost first: the call and the
    /// helper's key (`exchange`, `Trainer::step`).
    via: Vec<(&'a Expr, std::rc::Rc<str>)>,
    /// Macro bodies parsed as comma-separated expressions, by the macro's address.
    macros: &'a Macros,
    splits_in: &'a Splits,
    pub splits_out: Vec<SplitSeen>,
    /// A split's membership was unknown in this pass: run again with `splits_out`.
    pub needs_another_pass: bool,
    steps: u64,
    /// [`set_step_ceiling`]'s bound when this rank started.
    ceiling: u64,
    /// While evaluating a branch whose condition is opaque: communication there is undecidable.
    speculative: u32,
    /// The sender (world rank) of each receive from any source, by event id, as the
    /// previous pass resolved it: its status then names that rank.
    pub any_sources: HashMap<usize, usize>,
    /// Messages posted so far on each channel (communicator, sender, receiver, tag), in
    /// world ranks, sends and receives apart (`messages.rs`).
    p2p_seq: HashMap<(String, usize, usize, String, bool), u64>,
    /// What this rank's sends carried, where the check knew it.
    pub sent_out: messages::SentP2p,
    /// What the receive posted last takes, as the last pass's sender sent it.
    incoming: Option<std::rc::Rc<Vec<messages::Item>>>,
    /// The last sender of a receive from any source, by communicator key.
    any_last: HashMap<String, usize>,
    /// Guessed senders the last pass did not see send (`messages.rs`).
    unsent_guesses: u32,
    /// The receive posted last takes a message no rank sent in the last pass.
    unsent: bool,
    /// The receive from any source posted last has no sender in the last pass.
    any_blocked: bool,
    /// The step counts past which the quiet regions being run are summarised, outermost
    /// first (`summary.rs`).
    quotas: Vec<u64>,
    /// Quiet regions under [`summary`]'s larger quota now running (the steps of the
    /// outermost are what its budget counts; nested ones are within them).
    known_depth: u32,
    /// How variables came to hold data, by name: a text and the names it came from
    /// (for the messages of arguments that must agree, [`Self::data_dependent`]).
    why: HashMap<String, (String, Vec<String>)>,
    /// The `Self` type of the methods being run, innermost last.
    self_ty: Vec<String>,
    /// The module of the constant being evaluated ([`eval_consts`]), where no function runs.
    const_module: Option<String>,
    /// The helpers being applied, innermost last (their declared integer types:
    /// `numbers::int_width`).
    fn_stack: Vec<&'a ItemFn>,
    /// The depth of `fn_stack` at each closure body running now, innermost last.
    closures: Vec<usize>,
    /// The variables of the callers of the function running now, outermost first (a
    /// closure they made runs among its maker's: [`Self::in_closure`]).
    frames: Vec<scopes::Scopes<'a>>,
    /// The type each generic parameter of the function running now stands for
    /// (`M` → `Sum` in `check_monoid::<Sum>(..)`), one list per `fn_stack` entry run by
    /// [`Self::apply_with`]; `call_generics` is the next call's, set by its caller.
    generics: Vec<Vec<(String, String)>>,
    call_generics: Vec<(String, String)>,
    /// Inside a `for` loop walking the command line (`Interp::walks_command_line`).
    walking_args: usize,
    /// Results of helpers that cannot communicate, shared by every rank and world size
    /// of one check (`memo.rs`, [`Memo`]).
    pub memo: std::rc::Rc<std::cell::RefCell<Memo>>,
    /// What each broadcast's root held, by the communicator's key and the call's count
    /// on it, shared by the ranks of one pass (run in rank order): a member after the
    /// root takes the root's value for what arrived ([`Self::take_from_root`]).
    pub roots: Roots<'a>,
    /// The collective count on its communicator of the `all_to_all` that last
    /// delivered each item named by [`counts`] (the count the item's sender recorded).
    received_seq: FxMap<u64, u64>,
    /// How often each condition on values the same on every rank was decided in this
    /// rank's run, by the condition's address ([`agreed_decision`]).
    agreed_seen: FxMap<usize, u32>,
    /// Requests a `test()` found not complete yet: the next `test()` completes them.
    polled: std::collections::HashSet<usize>,
    /// The count of what a posted receive from any source takes, where known, for its
    /// status when it completes.
    any_counts: FxMap<usize, i128>,
    /// [`DECISIONS`] when this rank started (what it decided since is its own).
    decisions_from: u64,
    /// Conditions of that kind whose code communicates (or leaves early): decided, never
    /// speculated again ([`Self::agreed_branch`]).
    agreed_communicates: std::collections::HashSet<usize, std::hash::BuildHasherDefault<Fx>>,
    /// How often each condition on rank-local data was decided in this rank's run
    /// ([`local_decision`]), and what speculating it showed.
    local_seen: FxMap<usize, (u32, String)>,
    /// The hash of the condition whose branches are being speculated (what they set is
    /// computed from it).
    cond_fp: u64,
    /// How often each `while` loop (by its condition's address) was entered in this
    /// rank's run.
    loop_entries: FxMap<usize, u32>,
    /// Set for the speculation of branches under a condition the same on every rank:
    /// what they set from values the same on every rank stays so ([`Self::speculate`]).
    spec_agreed: bool,
    /// Set by [`Self::speculate`]: its branches left values the check follows (a
    /// variant, a number, an option) that differ from branch to branch, which merging
    /// would turn into data.
    spec_lossy: bool,
    /// What the branches of the last speculation gave (their values, in order).
    spec_values: Vec<V<'a>>,
}

/// What the quiet helpers of one check returned, by the helper's address, the sample of
/// the program's inputs, whether the call ran speculatively and a hash of the
/// arguments: each argument list seen with its result and whether the call read an
/// input. (Closures, the only values that borrow the syntax, are never kept, so the
/// values are `'static`.)
pub type Memo = FxMap<(usize, i128, bool, u64), Vec<(Vec<V<'static>>, V<'static>, bool)>>;

fn undecidable<'a>(at: &impl ToTokens, what: impl Into<String>) -> Flow<'a> {
    Flow::Stop(Stop::Undecidable { at: at.to_token_stream(), what: what.into(), located: false })
}

/// The module a package function or method was read from (`#[dist_module = "a::b"]`,
/// which the package reader adds; `None` for a nested fn).
pub(in crate::check) fn module_of(f: &ItemFn) -> Option<String> {
    f.attrs.iter().find(|a| a.path().is_ident("dist_module")).and_then(|a| match &a.meta {
        syn::Meta::NameValue(nv) => match &nv.value {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

fn path_str(p: &syn::Path) -> String {
    p.segments.iter().map(|s| s.ident.to_string()).collect::<Vec<_>>().join("::")
}

fn last_seg(p: &syn::Path) -> String {
    p.segments.last().map(|s| s.ident.to_string()).unwrap_or_default()
}

/// Evaluates the `const` items of the source file (in two passes, so one may use
/// another defined below it); those that are not integers, booleans or tags are left out.
/// A `const` of the package: what names it besides its own name (its module's path,
/// empty at the crate's root, or its type's name), whether that is a type (an
/// associated constant), and the item.
pub type PackageConst = (String, bool, syn::ItemConst);

pub fn eval_consts<'a>(
    consts: &'a [PackageConst],
    splits: &'a Splits,
    macros: &'a Macros,
    fns: &'a HashMap<String, ItemFn>,
) -> HashMap<String, V<'a>> {
    let mut it = Interp::new(0, 1, splits, macros, fns, HashMap::new());
    // Which const a bare name is: the first of that name at the crate's root, else the
    // first of that name (the entry's file first). In a module's function, its module's
    // own comes first ([`Interp::module_const`]).
    // (An associated constant is only ever named by its type's path.)
    let mut owner: HashMap<String, usize> = HashMap::new();
    for (i, (qual, _, c)) in consts.iter().enumerate() {
        if qual.is_empty() {
            owner.entry(c.ident.to_string()).or_insert(i);
        }
    }
    for (i, (_, of_type, c)) in consts.iter().enumerate() {
        if !of_type {
            owner.entry(c.ident.to_string()).or_insert(i);
        }
    }
    for _ in 0..2 {
        for (i, (qual, of_type, c)) in consts.iter().enumerate() {
            // (A module's constant computed from another by a bare name: that module's.)
            it.const_module = if *of_type { None } else { Some(qual.clone()) };
            let v = match it.expr(&c.expr) {
                // A numbered tag keeps its name for messages: "#1 ACT".
                Ok(V::Tag(t)) if t.starts_with('#') && !t.contains(' ') => V::Tag(format!("{t} {}", c.ident)),
                Ok(v @ (V::Int(_) | V::Bool(_) | V::Tag(_))) => v,
                // `const DIMS: [usize; 4] = [..]`, a tuple of sizes: kept when every item is.
                Ok(v @ (V::List(_) | V::Tuple(_) | V::Struct(..))) if known_const(&v) => v,
                _ => continue,
            };
            // Also by its path: `data::BLOCKS`, `Model::LAYERS`.
            if !qual.is_empty() {
                it.consts.insert(format!("{qual}::{}", c.ident), v.clone());
            }
            if owner.get(&c.ident.to_string()) == Some(&i) {
                it.set_const(c.ident.to_string(), v);
            }
        }
    }
    it.consts
}

/// Whether a constant's value is known all the way down (integers, booleans, tags,
/// names, enum variants, and lists, tuples and structs of them).
fn known_const(v: &V) -> bool {
    match v {
        V::Int(_) | V::Bool(_) | V::Tag(_) | V::Name(_) => true,
        V::List(items) => items.iter().all(known_const),
        V::Tuple(items) => items.iter().all(known_const),
        // An enum's variant or a struct of known fields (`const ALL: [Algo; 2] =
        // [Algo::HillisSteele, Algo::Blelloch]`).
        V::Struct(_, fields) => fields.iter().all(|(_, v)| known_const(v)),
        V::Opt(x) => x.as_deref().is_none_or(known_const),
        _ => false,
    }
}

impl<'a> Interp<'a> {
    pub fn new(
        rank: usize,
        size: usize,
        splits_in: &'a Splits,
        macros: &'a Macros,
        file_fns: &'a HashMap<String, ItemFn>,
        consts: HashMap<String, V<'a>>,
    ) -> Self {
        Interp {
            rank,
            size,
            any_sources: HashMap::new(),
            p2p_seq: HashMap::new(),
            sent_out: HashMap::new(),
            incoming: None,
            any_last: HashMap::new(),
            unsent_guesses: 0,
            unsent: false,
            any_blocked: false,
            quotas: Vec::new(),
            known_depth: 0,
            why: HashMap::new(),
            self_ty: Vec::new(),
            const_module: None,
            fn_stack: Vec::new(),
            closures: Vec::new(),
            frames: Vec::new(),
            generics: Vec::new(),
            call_generics: Vec::new(),
            walking_args: 0,
            agreed_seen: FxMap::default(),
            polled: Default::default(),
            any_counts: FxMap::default(),
            decisions_from: DECISIONS.with(|d| d.get()),
            agreed_communicates: Default::default(),
            scopes: scopes::Scopes::new(),
            comms: vec![CommInst {
                key: "world".into(),
                group: "World".into(),
                members: Some((0..size).collect()),
                children: 0,
                colls: 0,
                groups: None,
            }],
            events: Vec::new(),
            invalid_call: None,
            next_id: 0,
            fns: HashMap::new(),
            file_fns,
            const_syms: consts.iter().map(|(k, v)| (scopes::sym(k), v.clone())).collect(),
            consts,
            via: Vec::new(),
            macros,
            splits_in,
            splits_out: Vec::new(),
            needs_another_pass: false,
            steps: 0,
            ceiling: CEILING.with(|c| c.get()),
            speculative: 0,
            local_seen: FxMap::default(),
            cond_fp: 0,
            loop_entries: FxMap::default(),
            spec_agreed: false,
            spec_lossy: false,
            spec_values: Vec::new(),
            memo: Default::default(),
            roots: Default::default(),
            received_seq: Default::default(),
        }
    }

    /// Whether a failure of the program's own making here is taken to pass: in a run
    /// that assumes so ([`set_assume_checks_pass`]), once this rank has decided a
    /// condition by pattern (a loop on a residual run once, twice, …), a check the
    /// program makes of its own results (against a serial reference, of an iteration
    /// count) fails because the pattern is not the path a real run takes; the check
    /// follows the run that passes it.
    pub(super) fn assumes_checks_pass(&self) -> bool {
        // (Only once the rank has communicated too: a program checks its world size or
        // its inputs before its first op, and such a check refuses the size for real.)
        let on = self.speculative == 0
            && ASSUME.with(|a| a.get().0)
            && DECISIONS.with(|d| d.get()) > self.decisions_from
            && self.events.iter().any(|e| matches!(e, Ev::Coll { .. } | Ev::P2p { .. }));
        if on {
            ASSUME.with(|a| a.set((true, true)));
        }
        on
    }

    /// Runs `f` with its communicator parameter bound to the world.
    pub fn run(&mut self, f: &'a ItemFn) -> Outcome<'a> {
        if let Some(FnArg::Typed(pt)) = f.sig.inputs.first() {
            if self.bind(&pt.pat, V::Comm(0)) != Some(true) {
                return Outcome::Stop(Stop::Undecidable {
                    at: pt.pat.to_token_stream(),
                    what: "a parameter pattern other than a name".into(),
                    located: false,
                });
            }
        }
        let outcome = match self.block(&f.block) {
            Ok(V::Err) | Err(Flow::Fail) => Outcome::Fails,
            Ok(_) | Err(Flow::Break(..)) | Err(Flow::Continue(_)) => Outcome::Done,
            Err(Flow::Return(v)) => {
                if v == V::Err {
                    Outcome::Fails
                } else {
                    Outcome::Done
                }
            }
            Err(Flow::Stop(s)) => Outcome::Stop(s),
            // Only raised under a quota, which its region catches.
            Err(Flow::OverQuota) => Outcome::Done,
        };
        // A run that failed after this rank communicated: its failure may be the path the
        // check picked, not the program refusing the size before its first op.
        if matches!(outcome, Outcome::Fails)
            && self.events.iter().any(|e| matches!(e, Ev::Coll { .. } | Ev::P2p { .. }))
        {
            FAILED_AFTER_OPS.with(|f| f.set(true));
        }
        outcome
    }

    // ------------------------------------------------------------ scopes

    fn lookup(&self, name: &str) -> Option<&V<'a>> {
        self.lookup_sym(scopes::sym(name))
    }

    fn lookup_sym(&self, s: scopes::Sym) -> Option<&V<'a>> {
        self.scopes.get(s).or_else(|| self.const_syms.get(&s))
    }

    /// The variable (or const) a one-segment path names.
    fn lookup_ident(&self, i: &'a syn::Ident) -> Option<&V<'a>> {
        self.lookup_sym(scopes::ident_sym(i))
    }

    fn set_const(&mut self, name: String, v: V<'a>) {
        self.const_syms.insert(scopes::sym(&name), v.clone());
        self.consts.insert(name, v);
    }

    /// Every variable in scope, innermost first.
    fn scopes_iter(&self) -> impl Iterator<Item = (std::rc::Rc<str>, &V<'a>)> {
        self.scopes.iter().map(|(k, v)| (scopes::text(k), v))
    }

    fn define(&mut self, name: String, v: V<'a>) {
        self.scopes.define(scopes::sym(&name), v);
    }

    fn assign(&mut self, name: &str, v: V<'a>) {
        if let Some(slot) = self.scopes.get_mut(scopes::sym(name)) {
            *slot = v;
        }
    }

    /// Starts a function's run: fresh variables, the caller's kept in `frames`.
    fn enter_frame(&mut self) {
        let caller = std::mem::replace(&mut self.scopes, scopes::Scopes::new());
        self.frames.push(caller);
    }

    /// Ends a function's run: back to the caller's variables.
    fn leave_frame(&mut self) {
        self.scopes = self.frames.pop().expect("the caller's frame");
    }

    fn scoped<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        self.scopes.push();
        let r = f(self);
        self.scopes.pop();
        r
    }

    fn tick(&mut self, at: &impl ToTokens) -> Result<(), Flow<'a>> {
        self.steps += 1;
        let total = TOTAL_STEPS.with(|t| {
            t.set(t.get() + 1);
            t.get()
        });
        if total > self.ceiling {
            return Err(undecidable(at, "more evaluation steps than an attempt with messages may take".to_string()));
        }
        if self.quotas.last().is_some_and(|&q| self.steps > q) {
            return Err(Flow::OverQuota);
        }
        if self.steps > STEP_BUDGET {
            return Err(undecidable(at, format!("more than {STEP_BUDGET} evaluation steps")));
        }
        Ok(())
    }

    /// Where to report an event at `e`: `e` itself, or, when `e` is inside a helper of
    /// the package, the outermost call of one in the checked function (its tokens are
    /// the ones the compiler can point at), with `e`'s own file and line and the chain
    /// of calls in the message.
    fn site(&self, e: &'a Expr) -> Site<'a> {
        match self.via.first() {
            Some((call, _)) => Site::via(call, self.chain_at(e)),
            None => Site::new(e),
        }
    }

    /// "src/pipeline.rs:42, in `forward`, called from `Trainer::step` at
    /// src/trainer.rs:52, called from `main` at src/main.rs:17" for `node` inside the
    /// helpers under way (interned: rendered once per place and chain).
    fn chain_at(&self, node: &'a dyn ToTokens) -> u32 {
        use std::hash::{Hash, Hasher};
        let mut h = Fx::default();
        (node as *const dyn ToTokens as *const () as usize).hash(&mut h);
        for (call, _) in &self.via {
            (*call as *const Expr as usize).hash(&mut h);
        }
        super::trace::intern_loc(h.finish(), || self.chain_text(trace::line_of(node)))
    }

    /// The text of [`Self::chain_at`] for a place at `line` of the innermost helper.
    pub(super) fn chain_text(&self, line: usize) -> String {
        let Some((_, inner)) = self.via.last() else { return trace::entry_place(line) };
        // (A module's key `op/apply` reads as the path `op::apply`.)
        let mut s = format!("{}:{line}, in `{}`", trace::helper_file(inner), inner.replace('/', "::"));
        let (entry_file, entry_name) = trace::entry_file();
        for k in (0..self.via.len()).rev() {
            let (call, _) = &self.via[k];
            let (file, caller) = match k {
                0 => (entry_file.clone(), entry_name.clone()),
                _ => (trace::helper_file(&self.via[k - 1].1), self.via[k - 1].1.replace('/', "::")),
            };
            s.push_str(&format!(", called from `{caller}` at {file}:{}", trace::line_of(*call)));
        }
        s
    }

    /// A construct the check cannot follow inside a helper: reported at the outermost
    /// helper call in the checked function, naming its own file and line and the chain.
    fn locate_stop<T>(&self, r: Result<T, Flow<'a>>) -> Result<T, Flow<'a>> {
        match r {
            Err(Flow::Stop(Stop::Undecidable { at, what, located: false })) if !self.via.is_empty() => {
                let place = self.chain_text(trace::line_of(&at));
                let call = self.via[0].0;
                Err(Flow::Stop(Stop::Undecidable {
                    at: call.to_token_stream(),
                    what: format!("{what} (at {place})"),
                    located: true,
                }))
            }
            r => r,
        }
    }

    /// An argument every rank must pass alike (a root, an op) that depends on data: the
    /// check cannot prove it agrees, so it says so, with what it depends on.
    fn data_dependent(&self, arg: &'a Expr, role: &str, call: &str) -> Flow<'a> {
        undecidable(arg, self.data_dependent_what(arg, role, call))
    }

    /// What [`Self::data_dependent`] says: the argument, why, and the fix.
    pub(super) fn data_dependent_what(&self, arg: &'a Expr, role: &str, call: &str) -> String {
        let text = super::trace::expr_text(arg);
        format!(
            "the {role} `{text}` of `{call}`, which depends on data{}: every rank must pass the same {role}, \
             and a value computed from local data (a loss, a received value, a float) may differ across \
             ranks; compute it from `rank()`, `size()`, constants or the program's inputs, or agree on it \
             first (broadcast it from a fixed root)",
            self.why_chain(arg)
        )
    }

    /// " (`root` = … at line 8; `loss` = … at line 7)": how the variables `e` names came
    /// to depend on data, as far as the check saw (up to four steps).
    pub(super) fn why_chain(&self, e: &dyn ToTokens) -> String {
        let mut todo = Vec::new();
        summary::ident_walk(e.to_token_stream(), &mut todo);
        let mut seen = std::collections::HashSet::new();
        let mut parts = Vec::new();
        while let Some(name) = todo.pop() {
            if parts.len() >= 4 || !seen.insert(name.clone()) {
                continue;
            }
            if let Some((text, more)) = self.why.get(&name) {
                parts.push(text.clone());
                todo.extend(more.iter().rev().cloned());
            }
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" ({})", parts.join("; "))
        }
    }

    /// Notes how the variable `name` came to hold data (for [`Self::why_chain`]).
    pub(super) fn note_why(&mut self, name: &str, text: String, from: &dyn ToTokens) {
        let mut more = Vec::new();
        summary::ident_walk(from.to_token_stream(), &mut more);
        more.retain(|m| m != name);
        self.why.insert(name.to_string(), (text, more));
    }

    /// "line 12" in the checked function, "src/comms.rs:12" in a helper.
    pub(super) fn place(&self, node: &dyn ToTokens) -> String {
        let line = trace::line_of(node);
        match self.via.last() {
            Some((_, key)) => format!("{}:{line}", trace::helper_file(key)),
            None => trace::entry_place(line),
        }
    }

    fn fresh_id(&mut self) -> usize {
        self.next_id += 1;
        self.next_id - 1
    }

    // ------------------------------------------------------------ patterns
}
