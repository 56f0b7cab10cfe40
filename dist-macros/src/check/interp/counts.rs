//! Counts that travel: what an `all_to_all` delivered, named by the message it came in
//! (the communicator, the sending rank, the item's place in the sender's buffer), and
//! what the program computed from it, so that `all_to_all_v`'s counts can be compared
//! across ranks even where they are data: rank i's send count for rank j must be rank
//! j's receive count from rank i, which the simulation resolves through the sender's
//! record of what it sent ([`resolve`]).

use super::super::trace::{A2a, Count, Ev};

use super::value::{derived_of, fp_of, V};
use super::{FxMap, Interp};

thread_local! {
    /// An item an `all_to_all` delivered, by its hash: the communicator's key, the
    /// sender (world rank) and the item's index in the sender's buffer.
    static RECEIVED: std::cell::RefCell<FxMap<u64, (String, usize, usize)>> = Default::default();
    /// Data computed by arithmetic from such items, by its hash: the operator and the
    /// operands (a number, or data by its hash).
    static DERIVED: std::cell::RefCell<FxMap<u64, Derivation>> = Default::default();
}

/// What each rank sent by each `all_to_all` in the last pass, where the check knew it:
/// by communicator key, sending world rank and the collective's number on that
/// communicator, the items (`None` where one was data).
pub type SentKnown = std::collections::HashMap<(String, usize, u64), Vec<Option<i128>>>;

thread_local! {
    /// [`SentKnown`] for this pass: a receiver takes a known item as that number (a count
    /// rank 1 computed from the inputs arrives at rank 0 as that count, so the receive
    /// rank 0 posts, or not, under `count != 0` goes the way rank 1's send does).
    static SENT_KNOWN: std::cell::RefCell<SentKnown> = Default::default();
}

/// Sets what ranks sent by their `all_to_all`s, as the last pass showed ([`SentKnown`]).
pub fn set_sent_known(s: SentKnown) {
    SENT_KNOWN.with(|k| *k.borrow_mut() = s);
}

/// What the traces `traces` (by rank) show each rank sent by its `all_to_all`s.
pub fn sent_known_of(traces: &[Vec<Ev<'_>>]) -> SentKnown {
    let mut out = SentKnown::new();
    for (r, t) in traces.iter().enumerate() {
        for e in t {
            if let Ev::Coll { comm, a2a: Some(A2a::Sent(seq, items)), .. } = e {
                let items = items.iter().map(|c| if let Count::Known(i) = c { Some(*i) } else { None }).collect();
                out.insert((comm.clone(), r, *seq), items);
            }
        }
    }
    out
}

/// How [`DERIVED`] data was computed: the operator and its operands.
type Derivation = (Option<char>, Vec<Part>);

/// What rank `from` sent by its `seq`-th collective on a communicator (by key).
pub type SentBy<'s> = &'s dyn Fn(&str, usize, u64) -> Option<Vec<Count>>;

/// An operand of [`DERIVED`] data.
#[derive(Clone, Copy)]
enum Part {
    Int(i128),
    Data(u64),
}

/// Forgets what was received (between checks).
pub(super) fn reset() {
    RECEIVED.with(|r| r.borrow_mut().clear());
    DERIVED.with(|d| d.borrow_mut().clear());
}

fn travels(fp: u64) -> bool {
    RECEIVED.with(|r| r.borrow().contains_key(&fp)) || DERIVED.with(|d| d.borrow().contains_key(&fp))
}

/// The operator's symbol, for the operators a count is computed with.
pub(super) fn op_char(op: &syn::BinOp) -> Option<char> {
    use syn::BinOp::*;
    Some(match op {
        Add(_) | AddAssign(_) => '+',
        Sub(_) | SubAssign(_) => '-',
        Mul(_) | MulAssign(_) => '*',
        Div(_) | DivAssign(_) => '/',
        Rem(_) | RemAssign(_) => '%',
        _ => return None,
    })
}

/// Notes `result = l op r` where an operand was received (or computed from what was).
pub(super) fn note_arith(op: &syn::BinOp, l: &V, r: &V, result: &V) {
    let V::Opaque { comm: false, fp } = result else { return };
    let part = |v: &V| match v {
        V::Int(i) => Some(Part::Int(*i)),
        V::Opaque { comm: false, fp } if *fp != 0 => Some(Part::Data(*fp)),
        _ => None,
    };
    let (Some(a), Some(b)) = (part(l), part(r)) else { return };
    let moved = |p: Part| matches!(p, Part::Data(f) if travels(f));
    if (moved(a) || moved(b)) && !travels(*fp) {
        DERIVED.with(|d| d.borrow_mut().insert(*fp, (op_char(op), vec![a, b])));
    }
}

impl<'a> Interp<'a> {
    /// What an `all_to_all` leaves in a receive buffer `v` of scalars on communicator
    /// `c` (its `colls`-th collective, called at `site`): each item named by its
    /// sender and its place in the sender's buffer. `None` where the buffer is not a
    /// list of scalars whose length the members divide.
    pub(super) fn received_items(&mut self, c: usize, site: usize, v: &V<'a>) -> Option<V<'a>> {
        let V::List(items) = v else { return None };
        let members = self.comms[c].members.clone()?;
        let me = members.iter().position(|&w| w == self.rank)?;
        let n = members.len();
        if n == 0 || items.len() % n != 0 || items.iter().any(|x| matches!(x, V::List(_) | V::Tuple(_) | V::Struct(..)))
        {
            return None;
        }
        let b = items.len() / n;
        let key = self.comms[c].key.clone();
        let seq = self.comms[c].colls;
        let got = (0..items.len())
            .map(|t| {
                let (from, idx) = (members[t / b.max(1)], me * b + t % b.max(1));
                let known = SENT_KNOWN.with(|k| {
                    k.borrow().get(&(key.clone(), from, seq)).and_then(|items| items.get(idx).copied().flatten())
                });
                if let Some(i) = known {
                    return V::Int(i);
                }
                let fp = fp_of(&[
                    &V::Name("all_to_all".into()),
                    &V::Name(key.clone()),
                    &V::Int(site as i128),
                    &V::Int(from as i128),
                    &V::Int(idx as i128),
                ]);
                RECEIVED.with(|r| r.borrow_mut().insert(fp, (key.clone(), from, idx)));
                super::value::mark_relayed(&V::data(fp));
                self.received_seq.insert(fp, seq);
                V::data(fp)
            })
            .collect();
        Some(V::list(got))
    }

    /// `v` as a count for the simulation: a number, data by its hash, or what was
    /// received or computed from it (at most `depth` steps back).
    pub(super) fn count_of(&self, v: &V<'a>, depth: u32) -> Count {
        match v {
            V::Int(i) => Count::Known(*i),
            V::Opaque { comm: false, fp } if *fp != 0 => self.count_of_fp(*fp, depth),
            _ => Count::Unknown,
        }
    }

    fn count_of_fp(&self, fp: u64, depth: u32) -> Count {
        if let Some((comm, from, idx)) = RECEIVED.with(|r| r.borrow().get(&fp).cloned()) {
            if let Some(&seq) = self.received_seq.get(&fp) {
                return Count::Recv { comm, seq, from, idx };
            }
        }
        match DERIVED.with(|d| d.borrow().get(&fp).cloned()) {
            Some((op, parts)) if depth > 0 => Count::Derived {
                op,
                parts: parts
                    .into_iter()
                    .map(|p| match p {
                        Part::Int(i) => Count::Known(i),
                        Part::Data(f) => self.count_of_fp(f, depth - 1),
                    })
                    .collect(),
            },
            _ => Count::Data(fp),
        }
    }

    /// A list of scalars as counts, or data whose length is known to be `len` item by
    /// item as indexing it reads them (`counts[j]`); `None` for anything else.
    pub(super) fn counts_of(&self, v: &V<'a>, len: Option<i128>) -> Option<Vec<Count>> {
        match v {
            V::List(items) if items.iter().all(|x| !matches!(x, V::List(_) | V::Tuple(_) | V::Struct(..))) => {
                Some(items.iter().map(|x| self.count_of(x, 6)).collect())
            }
            V::Opaque { comm: false, fp } if *fp != 0 => {
                Some((0..len?).map(|k| self.count_of(&V::derived(&[v, &V::Int(k)]), 6)).collect())
            }
            _ => None,
        }
    }
}

/// What rank traces say `c` is: what was received replaced by what its sender sent
/// (found in `sent`: the sender's `all_to_all` on that communicator with that count),
/// and what was computed from it computed again from that.
pub fn resolve(c: &Count, sent: SentBy<'_>, depth: u32) -> Count {
    match c {
        Count::Recv { comm, seq, from, idx } if depth > 0 => match sent(comm, *from, *seq) {
            Some(items) => items.get(*idx).map_or(Count::Unknown, |x| resolve(x, sent, depth - 1)),
            None => Count::Unknown,
        },
        Count::Recv { .. } => Count::Unknown,
        Count::Derived { op, parts } => {
            let parts: Vec<Count> = parts.iter().map(|p| resolve(p, sent, depth.saturating_sub(1))).collect();
            let v = |p: &Count| match p {
                Count::Known(i) => Some(V::Int(*i)),
                Count::Data(f) => Some(V::data(*f)),
                _ => None,
            };
            let (Some(op), [a, b]) = (op, parts.as_slice()) else { return Count::Unknown };
            if let (Count::Known(x), Count::Known(y)) = (a, b) {
                return match op {
                    '+' => x.checked_add(*y),
                    '-' => x.checked_sub(*y),
                    '*' => x.checked_mul(*y),
                    '/' => x.checked_div(*y),
                    '%' => x.checked_rem(*y),
                    _ => None,
                }
                .map_or(Count::Unknown, Count::Known);
            }
            let (Some(l), Some(r)) = (v(a), v(b)) else { return Count::Unknown };
            let bin: syn::BinOp = match op {
                '+' => syn::parse_quote!(+),
                '*' => syn::parse_quote!(*),
                '-' => syn::parse_quote!(-),
                '/' => syn::parse_quote!(/),
                _ => syn::parse_quote!(%),
            };
            match derived_of(&bin, &l, &r) {
                V::Opaque { fp, .. } => Count::Data(fp),
                _ => Count::Unknown,
            }
        }
        c => c.clone(),
    }
}

/// The items rank `from` sent by its `seq`-th collective on `comm`, from the traces'
/// collectives by communicator and rank.
pub fn sent_in(evs: &[&Ev<'_>], seq: u64) -> Option<Vec<Count>> {
    evs.iter().find_map(|e| match e {
        Ev::Coll { a2a: Some(A2a::Sent(s, items)), .. } if *s == seq => Some(items.clone()),
        _ => None,
    })
}

/// Whether data with hash `fp` was computed exactly (the same wherever its hash is).
pub fn exact(fp: u64) -> bool {
    super::value::is_exact(fp)
}
