//! A collective call's arguments as the length checks of [`super::model`] read them:
//! lengths and counts where the check holds them, their text, and the errors the
//! runtime refuses them with.

use super::super::trace::Counts;
use super::forms;
use super::*;
use syn::{Expr, ExprMethodCall};

/// A buffer argument's length in elements, where the check holds it (`&v`, `&mut
/// v[a..b]`, `Some(&mut all[..])`).
pub(super) fn buf_len(v: &V) -> Option<i128> {
    match v {
        V::List(items) => Some(items.len() as i128),
        V::Opt(Some(x)) => buf_len(x),
        v => super::long::long_len(v),
    }
}

/// A collective call's arguments as [`Interp::check_lengths`] reads them: their lengths
/// and counts where the check holds them, their text, and the errors it refuses them
/// with.
pub(super) struct CallArgs<'x, 'a> {
    pub(super) it: &'x Interp<'a>,
    pub(super) e: &'a Expr,
    pub(super) mc: &'a ExprMethodCall,
    pub(super) base: &'x str,
    pub(super) args: &'x [V<'a>],
}

impl<'a> CallArgs<'_, 'a> {
    /// Argument `i`'s length in elements.
    pub(super) fn len(&self, i: usize) -> Option<i128> {
        self.args.get(i).and_then(buf_len)
    }

    /// Argument `i` as written (`&mut recv`).
    pub(super) fn text(&self, i: usize) -> String {
        let t = self.mc.args.get(i).map(|a| crate::check::trace::expr_text(a)).unwrap_or_default();
        t.strip_prefix("& ").map(|x| format!("&{x}")).unwrap_or(t)
    }

    /// A counts argument, named without its borrow (`counts[2]`).
    pub(super) fn name(&self, i: usize) -> String {
        self.text(i).trim_start_matches('&').trim_start_matches("mut ").to_string()
    }

    /// Argument `i` as known integers.
    pub(super) fn counts_at(&self, i: usize) -> Option<Vec<i128>> {
        self.args.get(i).and_then(int_list)
    }

    /// Whether argument `i`, an `Option`, is `Some`.
    pub(super) fn opt_given(&self, i: usize) -> Option<bool> {
        match self.args.get(i) {
            Some(V::Opt(o)) => Some(o.is_some()),
            _ => None,
        }
    }

    /// A buffer of the wrong length.
    pub(super) fn bad(&self, what: String) -> Flow<'a> {
        Flow::Stop(Stop::Invalid {
            site: self.it.site(self.e),
            msg: format!(
                "`{}` on rank {} at world size {}: {what}; the runtime refuses it with an error on every \
                 call: size the buffers from `size()` and the counts, or pin the sizes this program supports \
                 with #[spmd(sizes = A..=B)]",
                self.base, self.it.rank, self.it.size
            ),
        })
    }

    /// A value or buffer given on the wrong ranks (`Some` off the root, `None` on it).
    pub(super) fn misplaced(&self, what: String) -> Flow<'a> {
        Flow::Stop(Stop::Invalid {
            site: self.it.site(self.e),
            msg: format!(
                "`{}` on rank {} at world size {}: {what}; the runtime refuses it with an error on every \
                 call: give it on the root only (`(rank == root).then(|| ..)`, with the same root as the call's)",
                self.base, self.it.rank, self.it.size
            ),
        })
    }

    /// Which argument is the counts of a rooted or gathering `_v` collective, refused
    /// where it has not one entry per rank of the `n`.
    pub(super) fn counts_arg(&self, n: i128) -> Result<Option<usize>, Flow<'a>> {
        let counts_arg = match self.base {
            "all_gather_v" | "gather_v" | "scatter_v" | "reduce_scatter_v" => Some(2),
            _ => None,
        };
        if let Some(k) = counts_arg.and_then(|i| self.counts_at(i)) {
            if k.len() as i128 != n {
                return Err(self.bad(format!(
                    "`{}` has {} entries but the communicator has {n} ranks",
                    self.name(2),
                    k.len()
                )));
            }
        }
        Ok(counts_arg)
    }

    /// The counts argument `i`, for the ranks to be compared: known, or data with its
    /// hash.
    pub(super) fn counts(&self, i: usize) -> Option<Counts> {
        match self.args.get(i)? {
            v if int_list(v).is_some() => Some(Counts::Known(int_list(v).expect("checked"))),
            V::Opaque { comm: false, fp } if *fp != 0 => Some(Counts::Data(*fp, self.name(i))),
            v @ V::List(items) if items.iter().any(|x| matches!(x, V::Opaque { comm: false, fp } if *fp != 0)) => {
                Some(Counts::Data(fp_of(&[v]), self.name(i)))
            }
            _ => None,
        }
    }

    /// The counts argument `i` as forms (`super::forms`): numbers, or data computed
    /// from data by sums and products with numbers.
    pub(super) fn count_forms(&self, i: usize) -> Option<Vec<forms::Form>> {
        match self.args.get(i)? {
            V::List(items) => items.iter().map(forms::form_of).collect(),
            _ => None,
        }
    }

    /// Buffer `i` (its `role`), whose length is data, must have `want` elements (`why`),
    /// data too: an error where the two differ whatever that data is (`Σ counts + 1`
    /// against `Σ counts`) or unless it is 0 (`3 · rows` against `rows`).
    pub(super) fn want_form(
        &self,
        i: usize,
        role: &str,
        want: Option<&forms::Form>,
        why: &str,
    ) -> Result<(), Flow<'a>> {
        let (Some(have), Some(want)) = (self.args.get(i).and_then(forms::len_form), want) else { return Ok(()) };
        let Some(how) = (!have.terms.is_empty()).then(|| forms::provably_differ(&have, want)).flatten() else {
            return Ok(());
        };
        Err(Flow::Stop(Stop::Invalid {
            site: self.it.site(self.e),
            msg: format!(
                "`{}` on rank {} at world size {}: its {role} buffer `{}` has {how} it must have ({why}), \
                 whatever the data both are computed from{}; the runtime refuses such a call with an error: size \
                 the buffer from the same counts the call is given",
                self.base,
                self.it.rank,
                self.it.size,
                self.text(i),
                if how.contains(" as many") { " (unless it is empty)" } else { "" },
            ),
        }))
    }

    /// Buffer `i` (its `role`) must have `n_want` elements (`why`).
    pub(super) fn want(&self, i: usize, role: &str, n_want: i128, why: &str) -> Result<(), Flow<'a>> {
        match self.len(i) {
            Some(l) if l != n_want => Err(self.bad(format!(
                "its {role} buffer `{}` has {l} element{} but must have {n_want} ({why})",
                self.text(i),
                if l == 1 { "" } else { "s" }
            ))),
            _ => Ok(()),
        }
    }
}
