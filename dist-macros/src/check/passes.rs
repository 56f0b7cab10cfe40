//! One world size, pass by pass: every rank run with what the last pass learned
//! (splits' members, senders of receives from any source, what messages carry) until
//! it settles, then the verdict on the traces: clean, problems, a size the program
//! refuses, or a construct not followed.

use super::any_source;
use super::interp::{self, Interp, Macros, Outcome, Splits, Stop};
use super::{describe, sim, stuck, trace};
use std::collections::HashMap;
use syn::ItemFn;

/// How many times the body is re-run to resolve `split` memberships (each pass learns
/// the colors of one more level of nested splits).
const PASSES: usize = 4;

/// More passes, each while the last learned splits it had not seen (a recursive
/// halving, `cube = cube.split(upper, r)` down to one rank, nests log2(n) + 1 deep).
const SPLIT_PASSES: usize = 12;

/// How many more times it may be re-run as receives from any source resolve.
const ANY_PASSES: usize = 32;

/// How many more times it may be re-run as what messages carry becomes known (each
/// pass lets a receiver run one message further: a worker's next assignment).
const MSG_PASSES: usize = 64;

/// What one world size gave.
pub(super) enum SizeResult {
    /// Every rank ran to the end and the traces match.
    Clean,
    /// Some rank panics or returns `Err` at this size on every run: not a supported size.
    Fails,
    /// Communication depends on something the interpreter cannot evaluate.
    Undecidable(proc_macro2::TokenStream, String),
    /// Errors to report.
    Problems(Vec<syn::Error>),
}

/// What one pass over every rank gave: each rank's trace, the split colors learned,
/// whether another pass is needed (a split's members became known), the first invalid
/// call, the first construct not followed, and the ranks it stopped.
pub(super) struct Pass<'a> {
    traces: Vec<Vec<trace::Ev<'a>>>,
    learned: Splits,
    again: bool,
    invalid: Option<syn::Error>,
    undecidable: Option<(proc_macro2::TokenStream, String)>,
    stopped: Vec<usize>,
    /// Ranks that failed (the program's own error or panic) after communicating: the
    /// others run on, so collectives every rank reached before it, and the messages
    /// received and waited for before it, are judged.
    failed: Vec<usize>,
    /// Whether one of those failed having made no collective (point-to-point calls only).
    failed_p2p_only: bool,
    /// What the pass's messages carried, where the check knew it (`interp/messages.rs`),
    /// and which ranks ran to their end (so sent all they send).
    sent: interp::SentP2p,
    complete: Vec<bool>,
    /// Each rank's collective its run ended at as invalid (`Interp::invalid_call`).
    invalid_calls: Vec<(usize, trace::Ev<'a>)>,
}

/// The package's items the ranks run with: macros, functions, constants, memo.
pub(super) type Items<'a, 'b> = (&'a Macros, &'a HashMap<String, ItemFn>, &'b HashMap<String, interp::V<'a>>, &'b Memo);

/// Runs every rank of a world of `n` once, with the split colors and senders of receives
/// from any source known so far; `None` when a rank fails before it communicated (a size
/// the program does not support); a rank that fails after is in the pass's `failed`.
pub(super) fn run_ranks<'a: 's, 's>(
    f: &'a ItemFn,
    n: usize,
    (macros, file, consts, memo): Items<'a, '_>,
    splits: &'s Splits,
    any_known: &HashMap<(usize, usize), usize>,
) -> Option<Pass<'s>> {
    let mut pass = Pass {
        traces: Vec::with_capacity(n),
        learned: Splits::new(),
        again: false,
        invalid: None,
        undecidable: None,
        stopped: Vec::new(),
        failed: Vec::new(),
        failed_p2p_only: false,
        sent: interp::SentP2p::new(),
        complete: vec![false; n],
        invalid_calls: Vec::new(),
    };
    // (Ranks run in order, so a broadcast's root of a lower rank than its other members
    // has left what it held here when they reach the call.)
    let roots = interp::Roots::default();
    // (What the quiet regions' budgets had when a rank first failed: ranks run after it
    // only to judge what was communicated before, and leave later runs what they had.)
    let mut spent_at_failure = None;
    for r in 0..n {
        let mut it = Interp::new(r, n, splits, macros, file, consts.clone());
        it.memo = memo.clone();
        it.roots = roots.clone();
        it.any_sources = any_known.iter().filter(|((k, _), _)| *k == r).map(|((_, id), &w)| (*id, w)).collect();
        match it.run(f) {
            Outcome::Done => pass.complete[r] = true,
            // (`events` holds only posted sends, receives, collectives and waits.)
            Outcome::Fails if !it.events.is_empty() => {
                pass.failed.push(r);
                pass.failed_p2p_only |= !it.events.iter().any(|e| matches!(e, trace::Ev::Coll { .. }));
                spent_at_failure.get_or_insert_with(interp::spent);
            }
            Outcome::Fails => return None,
            Outcome::Stop(Stop::Invalid { site, msg }) => {
                pass.invalid.get_or_insert_with(|| site.error(format!("{msg}{}", site.helper_note())));
            }
            // Waits forever in a receive no rank sent (with messages): its trace ends there.
            Outcome::Stop(Stop::Blocked) => {}
            Outcome::Stop(Stop::Undecidable { at, what, .. }) => {
                pass.undecidable.get_or_insert((at, what));
                pass.stopped.push(r);
            }
        }
        for (key, rank, ck) in it.splits_out.drain(..) {
            pass.learned.entry(key).or_default().insert(rank, ck);
        }
        if let Some(ev) = it.invalid_call.take() {
            pass.invalid_calls.push((r, ev));
        }
        pass.again |= it.needs_another_pass;
        pass.sent.extend(std::mem::take(&mut it.sent_out));
        pass.traces.push(std::mem::take(&mut it.events));
    }
    if let Some(spent) = spent_at_failure {
        interp::restore_spent(spent);
    }
    Some(pass)
}

/// The quiet helpers' results of one check, shared by its ranks and sizes.
pub(super) type Memo = std::rc::Rc<std::cell::RefCell<interp::Memo>>;

/// A construct not followed at the first condition on rank-local data a rank decided in
/// this pass (`what`, then the condition), if it decided one.
pub(super) fn counted_by_data(what: &str) -> Option<SizeResult> {
    interp::first_local_decision()
        .map(|(at, cond)| SizeResult::Undecidable(at, format!("{what} (the condition {cond})")))
}

const ANY_SOURCE: &str = "receives from any source whose number depends on data the ranks hold";
const SELF: &str = "messages a rank sends itself, under a condition on data it holds";

/// Evaluation steps an attempt with messages may take at one size: 16 times what the
/// attempt without took, within these bounds; and all of one entry's attempts
/// together. (The master/worker programs of the corpus take up to 100 000 steps an
/// attempt, 200 rounds of requests; a server whose loop on what the messages hold the
/// attempt cannot follow either would run into the bound.)
const MSG_STEPS: (u64, u64) = (300_000, 600_000);
const MSG_STEPS_ALL: u64 = 3_000_000;

/// Attempts with messages that ran into their bound, after which an entry makes none.
const MSG_BOUNDED: u32 = 1;

thread_local! {
    /// What is left of [`MSG_STEPS_ALL`] for the entry being checked, and its attempts
    /// that ran into their bound.
    static MSG_LEFT: std::cell::Cell<(u64, u32)> = const { std::cell::Cell::new((MSG_STEPS_ALL, 0)) };
}

/// What is left of the entry's budget for attempts with messages ([`restore_msg_budget`]).
pub(super) fn msg_budget() -> (u64, u32) {
    MSG_LEFT.with(|l| l.get())
}

/// Gives back what runs made since [`msg_budget`] spent (runs made again with a parser's
/// arms shifted spend none of what later world sizes have).
pub(super) fn restore_msg_budget(left: (u64, u32)) {
    MSG_LEFT.with(|l| l.set(left));
}

/// Gives the entry about to be checked [`MSG_STEPS_ALL`] for its attempts with messages.
pub(super) fn reset_msg_budget() {
    MSG_LEFT.with(|l| l.set((MSG_STEPS_ALL, 0)));
}

/// One world size, run as [`check_size_as`] says without messages' contents. Where it
/// cannot be followed, once more with them ([`check_size_as`]'s `messages`): what a
/// send's buffer holds arrives at its receiver, and receives from any source take their
/// senders in one order the program can run in. That attempt's verdict counts where it
/// is one (clean, or problems), within [`MSG_STEPS`].
pub(super) fn check_size<'a>(
    f: &'a ItemFn,
    n: usize,
    macros: &'a Macros,
    file: &'a HashMap<String, ItemFn>,
    consts: &HashMap<String, interp::V<'a>>,
    memo: &Memo,
) -> SizeResult {
    let arms = interp::arms_taken();
    let r = check_size_once(f, n, (macros, file, consts, memo));
    // (The arms a failed run took are not taken yet: in a run that gets through, each
    // may lead elsewhere.)
    if matches!(r, SizeResult::Fails) {
        interp::restore_arms(arms);
    }
    r
}

/// [`check_size`]'s attempts: without messages' contents, then with them.
fn check_size_once<'a>(f: &'a ItemFn, n: usize, (macros, file, consts, memo): Items<'a, '_>) -> SizeResult {
    let s0 = interp::total_steps();
    let first = check_size_as(f, n, macros, file, consts, memo, false);
    // (Not under `strict`: what a message carries, and the order a receive from any
    // source takes its senders in, are rank-local data there, which arguments that must
    // agree may not depend on.)
    let (left, bounded) = MSG_LEFT.with(|l| l.get());
    if !matches!(first, SizeResult::Undecidable(..)) || left < MSG_STEPS.0 || bounded >= MSG_BOUNDED || interp::strict()
    {
        return first;
    }
    let start = interp::total_steps();
    let bound = (16 * (start - s0)).clamp(MSG_STEPS.0, MSG_STEPS.1).min(left);
    interp::set_step_ceiling(start + bound);
    let decided = interp::decided_agreed();
    let second = check_size_as(f, n, macros, file, consts, memo, true);
    // (Problems of a pass that decided conditions by the run's pattern are not taken:
    // what one rank knows exactly from a message, another may hold as reduced data the
    // pattern decides, and the two may go ways no run takes.)
    let patterned = interp::decided_agreed();
    interp::set_decided_agreed(decided || patterned);
    interp::set_step_ceiling(u64::MAX);
    interp::set_messages(false);
    let spent = interp::total_steps() - start;
    MSG_LEFT.with(|l| l.set((left.saturating_sub(spent), bounded + u32::from(spent >= bound))));
    match second {
        r @ SizeResult::Clean => r,
        r @ SizeResult::Problems(_) if !patterned => r,
        _ => first,
    }
}

/// What the passes over one world size learned so far ([`check_size_as`]).
#[derive(Default)]
struct Passes {
    /// Senders of receives from any source, as the last pass resolved them.
    any_known: HashMap<(usize, usize), usize>,
    /// What the last pass's traces show, for a verdict when the splits never settle.
    last: Vec<syn::Error>,
    /// Passes that resolved more senders of receives from any source (each lets the
    /// ranks run further: a reply to the status's source, a later round).
    any_passes: usize,
    /// Whether ranks decide conditions on data that differs from rank to rank (after a
    /// pass showed two ranks' data computed differently at one).
    local: bool,
    pass: usize,
    /// After a pass where ranks went their own ways at a condition on data another rank
    /// sent: what was not followed, and whether this pass has every rank go alike.
    relayed_seen: Option<(proc_macro2::TokenStream, String)>,
    /// Passes granted because the last one learned splits not seen before.
    split_passes: usize,
    /// Passes granted because the last one learned what messages carry, and passes
    /// where receives from any source took guessed senders.
    msg_passes: usize,
    guess_passes: usize,
}

impl Passes {
    /// How many passes may run, given what was learned.
    fn bound(&self) -> usize {
        PASSES
            + self.any_passes
            + self.split_passes
            + self.msg_passes
            + self.guess_passes
            + usize::from(self.local)
            + usize::from(self.relayed_seen.is_some())
    }
}

/// What a pass leads to: another pass, a verdict, or the end of the passes.
enum Step {
    Next,
    Done(SizeResult),
    Break,
}

/// One world size: passes over every rank until what they learn settles (splits'
/// members, senders of receives from any source, and, with `messages`, what messages
/// carry), then the verdict on the last.
#[allow(clippy::too_many_arguments)]
fn check_size_as<'a>(
    f: &'a ItemFn,
    n: usize,
    macros: &'a Macros,
    file: &'a HashMap<String, ItemFn>,
    consts: &HashMap<String, interp::V<'a>>,
    memo: &Memo,
    messages: bool,
) -> SizeResult {
    let mut splits = Splits::new();
    let mut st = Passes::default();
    interp::set_sent_known(interp::SentKnown::new());
    interp::set_sent_p2p(interp::SentP2p::new(), Vec::new());
    interp::set_guessing(messages);
    interp::set_messages(messages);
    interp::take_guessed();
    while st.pass < st.bound() {
        st.pass += 1;
        interp::reset_local(n, st.local, st.relayed_seen.is_some());
        if messages {
            // (Whether this pass decides a condition by the run's pattern.)
            interp::set_decided_agreed(false);
        }
        let ran = run_ranks(f, n, (macros, file, consts, memo), &splits, &st.any_known);
        let pass = match first_look(&mut st, ran, n, messages) {
            Ok(p) => p,
            Err(Step::Next) => continue,
            Err(Step::Done(r)) => return r,
            Err(Step::Break) => break,
        };
        if pass.again && pass.learned != splits {
            // A split's members are known now: run again before judging anything.
            st.last = sim::collectives(n, &pass.traces);
            let Pass { learned, traces, sent, complete, .. } = pass;
            drop(traces);
            // (With messages, what they carried goes to their receivers too: a worker
            // that stopped at what its master sends reaches the split of the workers
            // only once it is told.)
            if messages {
                interp::set_sent_p2p(sent, complete);
            }
            if learned.keys().any(|k| !splits.contains_key(k)) && st.split_passes < SPLIT_PASSES {
                st.split_passes += 1;
            }
            splits = learned;
            continue;
        }
        match verdict_of(&mut st, pass, n, messages) {
            Step::Next => continue,
            Step::Done(r) => return r,
            Step::Break => break,
        }
    }
    // Splits that never settle: ranks that create communicators in different orders
    // (each pass learns other members) show as collectives out of order on the parent.
    if !st.last.is_empty() {
        return SizeResult::Problems(st.last);
    }
    SizeResult::Undecidable(
        quote::quote_spanned!(f.sig.ident.span() => #f),
        "a `split` whose members the check could not work out".into(),
    )
}

/// A pass just run: another pass where it failed on a guessed sender, took guesses, or
/// showed ranks' data differ for the first time; its verdict where ranks failed after
/// communicating; else the pass, to be judged.
fn first_look<'s>(st: &mut Passes, ran: Option<Pass<'s>>, n: usize, messages: bool) -> Result<Pass<'s>, Step> {
    let guessed = interp::take_guessed();
    // (A pass that took guessed senders where a rank failed after point-to-point calls
    // alone is taken as the guesses' doing, as before such ranks were judged: no more
    // guesses, as where no rank communicated.)
    let Some(mut pass) = ran.filter(|p| !(guessed && p.failed_p2p_only)) else {
        if guessed {
            // A guessed sender took a rank where the program fails: no more guesses.
            interp::set_guessing(false);
            st.guess_passes += 1;
            return Err(Step::Next);
        }
        return Err(Step::Done(SizeResult::Fails));
    };
    // Receives from any source took guessed senders: the pass is never judged. The
    // simulation says which sender each takes, given what the ranks sent; the next
    // pass runs with those and with what the messages carried, until no guess is
    // left (or guesses stop teaching anything: then the ranks go on without them).
    if guessed && !pass.again {
        let mut found = HashMap::new();
        let _ = any_source::scheduled(n, &mut pass.traces, &mut found);
        let learned_any = found != st.any_known || !interp::same_sent_p2p(&pass.sent);
        if !learned_any || st.guess_passes >= ANY_PASSES {
            interp::set_guessing(false);
        }
        st.any_known = found;
        interp::set_sent_p2p(pass.sent, pass.complete);
        st.guess_passes += 1;
        return Err(Step::Next);
    }
    if !pass.failed.is_empty() {
        // (With messages, only where the receivers took what the senders sent.)
        let p2p = !messages || interp::same_sent_p2p(&pass.sent);
        return Err(Step::Done(failed_after_communicating(n, &pass.traces, &pass.failed, p2p)));
    }
    if !st.local && interp::local_data_differs() {
        st.local = true;
        return Err(Step::Next);
    }
    Ok(pass)
}

/// The verdict on a pass whose splits settled, or another pass where it learned
/// senders, messages, or how ranks go at conditions on data another rank sent.
fn verdict_of(st: &mut Passes, pass: Pass<'_>, n: usize, messages: bool) -> Step {
    let Pass { mut traces, again, invalid, undecidable, stopped, sent, complete, invalid_calls, .. } = pass;
    // Conditions on data that may differ from rank to rank: followed where ranks'
    // data tell apart (problems found then say how the ranks went), else the
    // construct is not followed.
    // A condition only ranks with data the check cannot tell apart met leaves the
    // pass unproven; but where ranks whose data differ went different ways, what
    // that run did wrong is a run the program can take, whatever the other
    // conditions would have done, and is reported.
    let interp::LocalVerdict { unknown, note: local_note, relayed } = interp::local_verdict();
    // Senders of receives from any source, where one rank can send each.
    let mut found = HashMap::new();
    let resolved = if again { Ok(()) } else { any_source::resolve_any(n, &mut traces, &mut found, messages) };
    let any_new = resolved.is_ok() && !found.is_empty() && found != st.any_known;
    // Messages whose contents this pass learned (a master's assignments, a count
    // sent before the data): where a rank stopped at what it could not follow, went
    // its way on data, or waits on a source not known yet, or once receivers were
    // given messages at all, one more pass with them (and the senders found), until
    // what is sent is what was received.
    let msgs_more = messages && !again && !interp::same_sent_p2p(&sent) && st.msg_passes < MSG_PASSES;
    let in_doubt = undecidable.is_some()
        || unknown.is_some()
        || local_note.is_some()
        || relayed.is_some()
        || resolved.is_err()
        || any_new;
    if msgs_more && (in_doubt || interp::any_sent_p2p()) {
        interp::set_sent_p2p(sent, complete);
        st.msg_passes += 1;
        if any_new {
            st.any_known = found;
        }
        return Step::Next;
    }
    // With messages, only a run where no rank decided a condition on data the check
    // picked is judged: what one rank received it knows, another's it may not, and
    // picks that disagree make runs the program cannot take.
    // (Nor one whose receivers took other messages than the senders sent.)
    if messages
        && (unknown.is_some() || local_note.is_some() || relayed.is_some() || (!again && !interp::same_sent_p2p(&sent)))
    {
        return Step::Done(SizeResult::Undecidable(quote::quote!(), String::new()));
    }
    if let (Some(r), None, false) = (&relayed, &st.relayed_seen, again) {
        let ran_through = invalid.is_none() && undecidable.is_none();
        match relayed_run(n, &traces, ran_through, invalid.is_some(), local_note.as_deref()) {
            Relayed::Problems(p) => return Step::Done(p),
            Relayed::Again => {
                st.relayed_seen = Some(r.clone());
                return Step::Next;
            }
            Relayed::Judge => {}
        }
    }
    let relayed_seen = st.relayed_seen.clone();
    let not_followed = |at, what| not_followed(at, what, relayed_seen.as_ref());
    if let Some((at, what)) = unknown.clone().filter(|_| local_note.is_none() && st.relayed_seen.is_none()) {
        return Step::Done(SizeResult::Undecidable(at, what));
    }
    let noted = |errs| noted(errs, local_note.as_deref());
    if let Some(e) = invalid {
        // (The invalid calls at the ends of their ranks' traces, for their roots.)
        let at: Vec<usize> = invalid_calls.iter().map(|(r, _)| *r).collect();
        for (r, ev) in invalid_calls {
            traces[r].push(ev);
        }
        return Step::Done(noted(vec![sim::roots_or_counts_differ(n, &traces, &at).unwrap_or(e)]));
    }
    if any_new {
        // A status names its sender now: run again so code that uses it is followed.
        st.any_known = found;
        if st.any_passes < ANY_PASSES {
            st.any_passes += 1;
        }
        return Step::Next;
    }
    // A receive from any source that no send can match, while every other rank ran
    // to its end: no later send can come, whatever the receiver would have done.
    // (Unless a rank decided a condition on its own data in this pass: how many
    // messages a server loop receives, `until every peer said Done`, depends on what
    // the messages hold, which the check picked without knowing; the count is not
    // proven wrong.)
    // (Or while every rank stopped where the check cannot follow it blocks before it
    // gets there: workers waiting for a master's first assignment while it waits for a
    // hello none of them sends.)
    if let Err(any_source::AnySource::Unmatched(e, dst)) = &resolved {
        if !again && (stopped.iter().all(|r| r == dst) || stuck::blocked_before_end(n, &traces, &stopped)) {
            // (With what the others wait for meanwhile: a deadlock, told from both sides.)
            let others = stuck::blocked_elsewhere(n, &traces, *dst);
            let e = match others.is_empty() {
                true => e.clone(),
                false => syn::Error::new(e.span(), format!("{e}\nmeanwhile {}", others.join("; "))),
            };
            return Step::Done(counted_by_data(ANY_SOURCE).unwrap_or_else(|| SizeResult::Problems(vec![e])));
        }
    }
    if let Some((at, what)) = undecidable {
        // With messages: ranks stopped where the check cannot follow them, each after
        // it blocks forever in the run (a master blocked in a send to itself before
        // the `recv_any` whose sender it cannot know): what the run shows is judged.
        if messages && !again && resolved.is_ok() && stuck::blocked_before_end(n, &traces, &stopped) {
            return Step::Done(judged(n, &traces, resolved, None, local_note.as_deref(), st.relayed_seen.as_ref()));
        }
        return Step::Done(not_followed(at, what));
    }
    if !again {
        return Step::Done(judged(n, &traces, resolved, unknown, local_note.as_deref(), st.relayed_seen.as_ref()));
    }
    Step::Break
}

/// A pass where `failed` ranks failed after communicating (the root's own check of a
/// configuration it broadcast, run with a length the others did not receive; a shape
/// `assert!` on a matrix received into a buffer of the wrong length): the collectives
/// every member reached before that are judged, and, with `p2p`, the messages received
/// and waited for before it ([`sim::waited_message_lengths`]), when the ranks' data did
/// not go different ways; else the size is one the program does not support.
fn failed_after_communicating(n: usize, traces: &[Vec<trace::Ev<'_>>], failed: &[usize], p2p: bool) -> SizeResult {
    let errs = if interp::local_data_differs() {
        Vec::new()
    } else {
        let mut errs = sim::reached_collectives(n, traces);
        errs.extend(sim::waited_message_lengths(n, traces).filter(|_| p2p));
        errs
    };
    if errs.is_empty() {
        return SizeResult::Fails;
    }
    let s = if failed.len() == 1 { "s" } else { "" };
    noted(errs, Some(&format!("{} then fail{s} with the program's own error or panic", describe::ranks(failed))))
}

/// The verdict on a pass every rank ran through, its receives from any source resolved
/// as `resolved` says: its problems (with `note`, how ranks went at conditions on their
/// own data), else what it could not follow, else clean.
fn judged(
    n: usize,
    traces: &[Vec<trace::Ev<'_>>],
    resolved: Result<(), any_source::AnySource>,
    unknown: Option<(proc_macro2::TokenStream, String)>,
    note: Option<&str>,
    relayed: Option<&(proc_macro2::TokenStream, String)>,
) -> SizeResult {
    match resolved {
        Ok(()) => {}
        Err(any_source::AnySource::Race(at, what)) => return not_followed(at, what, relayed),
        Err(any_source::AnySource::Unmatched(e, _)) => {
            return counted_by_data(ANY_SOURCE).unwrap_or_else(|| noted(vec![e], note))
        }
    }
    let errs = sim::check(n, traces);
    // At one rank, a problem found after the rank decided a condition on data it holds
    // (the kind word of a message it sent itself) is one of the ways the check picked,
    // not one every run takes: no other rank can go another way.
    if let Some(r) = (!errs.is_empty() && n == 1 && note.is_none()).then(|| counted_by_data(SELF)).flatten() {
        return r;
    }
    match unknown.or_else(|| sim::unproven(traces)) {
        _ if !errs.is_empty() => noted(errs, note),
        Some((at, what)) => not_followed(at, what, relayed),
        None if relayed.is_some() => not_followed(quote::quote!(), String::new(), relayed),
        None => SizeResult::Clean,
    }
}

/// Problems, each with `note` (how ranks went at conditions on their own data).
fn noted(errs: Vec<syn::Error>, note: Option<&str>) -> SizeResult {
    match note {
        None => SizeResult::Problems(errs),
        Some(note) => {
            SizeResult::Problems(errs.into_iter().map(|e| syn::Error::new(e.span(), format!("{e} ({note})"))).collect())
        }
    }
}

/// A construct not followed: `at` and `what`, or after a pass of [`Relayed::Again`],
/// the condition on data another rank sent.
fn not_followed(
    at: proc_macro2::TokenStream,
    what: String,
    relayed: Option<&(proc_macro2::TokenStream, String)>,
) -> SizeResult {
    match relayed {
        Some((at, cond)) => relayed_not_followed(at.clone(), cond),
        None => SizeResult::Undecidable(at, what),
    }
}

/// What a pass where ranks went their own ways at a condition on data another rank sent
/// them makes of the run ([`interp::LocalVerdict::relayed`]).
enum Relayed {
    /// A collective some ranks skipped: an error whatever the data.
    Problems(SizeResult),
    /// Sends and receives that may not pair only because of that condition: one more
    /// pass with every rank alike.
    Again,
    /// Nothing wrong: judged as any other pass.
    Judge,
}

/// Where a rank went its way at a condition on data another rank sent it, the run that
/// went wrong may be one the program cannot take: the data may carry the sender's own
/// decision, a count it sent, then a message sent only where the count is not zero. That
/// condition is not followed; one more pass shows what goes wrong whatever the data:
/// every rank goes alike at every condition, and what an `all_to_all` sent that the
/// check knows (counts computed from the inputs) arrives as those numbers, so a receive
/// under `count != 0` goes the way its sender's send under `!bucket.is_empty()` does.
/// (Where every rank ran to its end, a collective some ranks skipped is one they skip
/// whatever the data, and what else the run shows goes with it.)
fn relayed_run(
    n: usize,
    traces: &[Vec<trace::Ev<'_>>],
    ran_through: bool,
    invalid: bool,
    note: Option<&str>,
) -> Relayed {
    if ran_through && !sim::collectives(n, traces).is_empty() {
        let note = note.unwrap_or_default();
        let errs = sim::check(n, traces);
        return Relayed::Problems(SizeResult::Problems(
            errs.into_iter().map(|e| syn::Error::new(e.span(), format!("{e} ({note})"))).collect(),
        ));
    }
    if invalid || !sim::check(n, traces).is_empty() {
        interp::set_sent_known(interp::sent_known_of(traces));
        return Relayed::Again;
    }
    Relayed::Judge
}

/// The construct not followed after a pass of [`Relayed::Again`]: the condition.
fn relayed_not_followed(at: proc_macro2::TokenStream, cond: &str) -> SizeResult {
    SizeResult::Undecidable(
        at,
        format!(
            "the condition {cond}, on data that came from another rank: whether it goes the way that rank's own \
             decision went is not followed"
        ),
    )
}
