//! Conditions on data that may differ from rank to rank (a local loss, a received
//! count): which branch each rank takes in a pass, so ranks whose data was computed
//! from different values go different ways where a real run may, and the verdict when
//! no two ranks' data tell apart.

use super::*;

/// One condition on data that differs from rank to rank, met in this pass: the first
/// rank to meet it, its data's hash ([`V::Opaque`]'s `fp`) and the arm it took; a rank
/// whose data was computed otherwise, if any; and where the condition is, for verdicts.
struct LocalSite {
    rank: usize,
    fp: u64,
    pick: usize,
    other: Option<usize>,
    /// Whether a rank's data there came from another rank ([`value::is_relayed`]).
    relayed: bool,
    at: proc_macro2::TokenStream,
    what: String,
    cond: String,
}

/// The conditions on rank-local data met in this pass, by condition address and ordinal.
#[derive(Default)]
struct LocalSites {
    size: usize,
    /// Whether ranks decide such conditions in this pass. A first pass does not: a rank
    /// stops at the first one whose code communicates (as at any construct not
    /// followed) and notes its data's hash there; only when two ranks' hashes differ at
    /// one condition does the next pass decide them (a program whose ranks compute such
    /// data alike costs no more than before).
    enabled: bool,
    sites: FxMap<(usize, u32), LocalSite>,
    order: Vec<(usize, u32)>,
    /// Where ranks stopped in a pass that does not decide: condition and data hash.
    stops: FxMap<usize, u64>,
    /// Two ranks stopped at one condition with data hashed differently.
    differ: bool,
    /// By condition and rank: how many of its tests the rank decided against the first
    /// rank's pick ([`local_decision`]).
    lag: FxMap<(usize, usize), u32>,
    /// Whether every rank takes the first rank's branch at each condition, whatever its
    /// data (a pass after one where ranks went their own ways at a condition on data
    /// received from another rank: [`LocalVerdict::relayed`]).
    alike: bool,
}

thread_local! {
    static LOCAL: std::cell::RefCell<LocalSites> = std::cell::RefCell::new(LocalSites::default());
}

/// Starts a pass of `size` ranks: no condition on rank-local data met yet; `decide`:
/// whether ranks decide them in this pass ([`LocalSites::enabled`]); `alike`: whether
/// they all go the first rank's way ([`LocalSites::alike`]).
pub fn reset_local(size: usize, decide: bool, alike: bool) {
    LOCAL.with(|l| *l.borrow_mut() = LocalSites { size, enabled: decide, alike, ..Default::default() });
}

/// Whether ranks decide conditions on rank-local data in this pass.
pub(super) fn local_enabled() -> bool {
    LOCAL.with(|l| l.borrow().enabled)
}

/// A rank stopped at the condition `site` on data with hash `fp` (a pass that does not
/// decide such conditions).
pub(super) fn local_stop(site: usize, fp: u64) {
    LOCAL.with(|l| {
        let mut l = l.borrow_mut();
        match l.stops.get(&site) {
            Some(&f) if f != fp => l.differ = true,
            // Exact data ([`V::derived`]): decided too, alike where ranks agree on it;
            // and any data where one rank runs (no other rank can go the other way).
            _ if value::is_exact(fp) || l.size == 1 => l.differ = true,
            Some(_) => {}
            None => {
                l.stops.insert(site, fp);
            }
        }
    })
}

/// Whether, in this pass, two ranks stopped at one condition on data they computed
/// from different values: the next pass decides such conditions.
pub fn local_data_differs() -> bool {
    LOCAL.with(|l| l.borrow().differ)
}

/// How the pass's conditions on rank-local data went ([`local_decision`]).
pub struct LocalVerdict {
    /// One met only by ranks whose data the check cannot tell apart: it may agree or
    /// not, which the check cannot know (the construct it cannot follow).
    pub unknown: Option<(proc_macro2::TokenStream, String)>,
    /// Where ranks whose data was computed from different inputs took different
    /// branches: a note for the problems found.
    pub note: Option<String>,
    /// Where ranks went different ways at a condition on data one of them received from
    /// another rank: the pairing of sends and receives found may be a run the program
    /// cannot take (the message may carry the sender's own decision: a count it sends,
    /// then a payload sent only where the count is not zero). (A collective reached by
    /// some ranks only is a problem whatever the data: every rank must reach it.)
    pub relayed: Option<(proc_macro2::TokenStream, String)>,
}

/// The verdict on this pass's conditions on rank-local data.
pub fn local_verdict() -> LocalVerdict {
    LOCAL.with(|l| {
        let l = l.borrow();
        let mut v = LocalVerdict { unknown: None, note: None, relayed: None };
        for k in &l.order {
            let s = &l.sites[k];
            match s.other {
                // Computed exactly, the same way on every rank: the same on every rank.
                None if l.size > 1 && !value::is_exact(s.fp) => {
                    v.unknown.get_or_insert_with(|| (s.at.clone(), s.what.clone()));
                }
                None => {}
                Some(o) => {
                    if s.relayed {
                        v.relayed.get_or_insert_with(|| (s.at.clone(), s.cond.clone()));
                    }
                    v.note.get_or_insert_with(|| {
                        format!(
                            "when the condition {} goes one way on rank {} and the other way on rank {o}: it \
                             tests data computed from different values on those ranks, which may differ",
                            s.cond, s.rank,
                        )
                    });
                }
            }
        }
        v
    })
}

/// The first condition on rank-local data a rank decided in this pass, if any: where it
/// is and its text.
pub fn first_local_decision() -> Option<(proc_macro2::TokenStream, String)> {
    LOCAL.with(|l| {
        let l = l.borrow();
        l.order.first().map(|k| (l.sites[k].at.clone(), l.sites[k].cond.clone()))
    })
}

/// Which of `arms` branches rank `rank` takes at the `j`th test of the condition at
/// `site` on data with hash `fp` that may differ from rank to rank: the first rank to
/// test it follows this run's pattern ([`AGREED_MODES`]); a later rank whose data has
/// the same hash takes the same branch, one whose data was computed from other values
/// the next one, the way a run where the data differs may go.
#[allow(clippy::too_many_arguments)]
pub(super) fn local_decision(
    site: usize,
    j: u32,
    fp: u64,
    rank: usize,
    arms: usize,
    at: proc_macro2::TokenStream,
    what: String,
    cond: String,
    first: Option<bool>,
) -> usize {
    LOCAL.with(|l| {
        let mut l = l.borrow_mut();
        // (Every rank alike: each test takes its first branch, `then` of an `if`, the
        // first arm of a `match` (a loop's tests still end it as its pattern says): the
        // run where every rank's data goes one way, each bucket non-empty. Which test of
        // one rank pairs with which of another's, a receive from rank 2 with rank 2's
        // send to this one, the check cannot tell; all alike pairs them.)
        if l.alike {
            return first.map_or(0, |d| usize::from(!d));
        }
        if let Some(s) = l.sites.get_mut(&(site, j)) {
            if s.fp == fp {
                return s.pick;
            }
            s.other.get_or_insert(rank);
            s.relayed |= value::is_relayed(fp);
            let pick = (s.pick + 1) % arms.max(1);
            *l.lag.entry((site, rank)).or_insert(0) += 1;
            return pick;
        }
        // A rank that went the other way at earlier tests of this condition follows the
        // pattern that many tests late: where the first rank left a `loop` at its first
        // test, this one leaves at its second (a pattern true only at the first test
        // would otherwise keep it in the loop until the step budget).
        let k = j.saturating_sub(l.lag.get(&(site, rank)).copied().unwrap_or(0));
        let pick = match (arms, first) {
            (_, Some(d)) => usize::from(!d),
            (0..=2, _) => usize::from(!agreed_decision(k)),
            (_, None) => (agreed_mode() as usize + k as usize + usize::from(agreed_decision(k))) % arms,
        };
        let relayed = value::is_relayed(fp);
        l.sites.insert((site, j), LocalSite { rank, fp, pick, other: None, relayed, at, what, cond });
        l.order.push((site, j));
        pick
    })
}
