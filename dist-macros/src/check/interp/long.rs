//! Buffers too long to hold item by item (`vec![0.0; k]` with `k` past
//! `REPEAT_BOUND`): data whose length the check still knows, as a buffer's length and
//! through `.len()`.

use super::*;

thread_local! {
    /// The length of each buffer too long to hold item by item (`vec![0.0; k]` with `k`
    /// past `REPEAT_BOUND`), by its hash. A value computed from it gets another hash,
    /// and so does the buffer where the check forgets it without keeping its shape
    /// (grown, cut, emptied by `mem::take`, lent mutably to code it cannot read:
    /// `eval::forget_with`), so the check no longer holds a length it may have lost;
    /// writes that keep the length (`fill`, `sort`, an item assigned) keep it.
    static LENS: std::cell::RefCell<super::FxMap<u64, i128>> = Default::default();
}

/// A buffer of `len` items, each `item`, too long to hold item by item: data whose
/// length the check knows ([`long_len`]).
pub(super) fn long_buffer<'a>(item: &V<'a>, len: i128) -> V<'a> {
    let v = V::derived(&[&V::Name("vec![_; _]".into()), item, &V::Int(len)]);
    if let V::Opaque { comm: false, fp } = v {
        LENS.with(|l| l.borrow_mut().insert(fp, len));
    }
    v
}

/// The length of a buffer made by [`long_buffer`], where `v` is one.
pub(super) fn long_len(v: &V) -> Option<i128> {
    match v {
        V::Opaque { comm: false, fp } => LENS.with(|l| l.borrow().get(fp).copied()),
        _ => None,
    }
}

/// Forgets the lengths (between checks).
pub(super) fn reset() {
    LENS.with(|l| l.borrow_mut().clear());
}
