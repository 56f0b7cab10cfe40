//! `match`es on a value the same on every rank (a parser's flags) decided by the run's
//! pattern: which arms some run took, and each run's offset into them, so that every
//! arm is taken in some run.

use super::{agreed_decision, agreed_mode, FxMap};

thread_local! {
    /// Each `match` on a value the same on every rank (an argument matched against the
    /// flags a parser knows) decided by pattern at this world size: its arm count and the
    /// arms some run took; and this run's offset into the arms ([`arm_pick`]).
    static ARMS: std::cell::RefCell<FxMap<usize, (usize, u64)>> = Default::default();
    static ARM_OFFSET: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Forgets which arms were taken (a new world size) and sets the offset to 0.
pub fn reset_arms() {
    ARMS.with(|a| a.borrow_mut().clear());
    ARM_OFFSET.with(|o| o.set(0));
}

/// Which arms some run took so far, per `match` ([`restore_arms`] takes it back).
pub fn arms_taken() -> FxMap<usize, (usize, u64)> {
    ARMS.with(|a| a.borrow().clone())
}

/// Puts back which arms were taken: a run that failed (an arm that ends in the parser's
/// own error for an unknown flag) has not shown what the other arms it took lead to.
/// (The `match`es it reached stay known, with no arm taken.)
pub fn restore_arms(taken: FxMap<usize, (usize, u64)>) {
    ARMS.with(|a| {
        for (site, e) in a.borrow_mut().iter_mut() {
            e.1 = taken.get(site).map_or(0, |t| t.1);
        }
    });
}

/// Sets this run's offset into the arms of `match`es decided by pattern.
pub fn set_arm_offset(k: usize) {
    ARM_OFFSET.with(|o| o.set(k));
}

/// This run's offset into the arms (a key of the quiet helpers' memo, as the pattern is).
pub(crate) fn arm_offset() -> usize {
    ARM_OFFSET.with(|o| o.get())
}

/// Whether some `match` decided by pattern has an arm no run took yet.
pub fn arms_left() -> bool {
    ARMS.with(|a| a.borrow().values().any(|&(k, taken)| k <= 64 && taken.count_ones() < k as u32))
}

/// The arm of `arms` a `match` at `site` on a value the same on every rank takes at its
/// `j`th decision: this run's pattern, shifted by the run's arm offset (runs with other
/// offsets take the other arms: a parser's `"--check-plan" =>` is taken in some run),
/// noted as taken.
pub(crate) fn arm_pick(site: usize, j: u32, arms: usize) -> usize {
    let offset = ARM_OFFSET.with(|o| o.get());
    let pick = (agreed_mode() as usize + j as usize + usize::from(agreed_decision(j)) + offset) % arms.max(1);
    ARMS.with(|a| {
        let mut a = a.borrow_mut();
        let e = a.entry(site).or_insert((arms, 0));
        if pick < 64 {
            e.1 |= 1 << pick;
        }
    });
    pick
}
