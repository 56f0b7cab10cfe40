//! The runtime as the check sees it: communicators and their members, what each
//! communication call posts (p2p posts, collectives, waits), and how groups are created.
//! Ops and their argument roles come from the op table (`dist-ops`).

use super::super::trace::call_name;
use super::super::trace::{A2a, Count, Counts, Ev};
use super::call_args::{buf_len, CallArgs};
use super::forms;
use super::*;
use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{Expr, ExprMethodCall};

/// `0, 2, 3`.
pub(super) fn join(v: &[usize]) -> String {
    v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")
}

/// Whether a token stream names a variable bound to a communicator.
pub(super) fn mentions_comm(me: &Interp, ts: &TokenStream) -> bool {
    ts.clone().into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => me.lookup(&i.to_string()).is_some_and(V::has_comm),
        proc_macro2::TokenTree::Group(g) => mentions_comm(me, &g.stream()),
        _ => false,
    })
}

/// Whether `m` is a method [`Interp::comm_query`] answers on a communicator.
pub(super) fn comm_query_name(m: &str) -> bool {
    matches!(
        m,
        "rank"
            | "size"
            | "clone"
            | "as_ref"
            | "borrow"
            | "map_err"
            | "context"
            | "with_context"
            | "unwrap"
            | "expect"
            | "members"
            | "name"
            | "backend"
            | "stream"
            | "device_kind"
            | "world_rank"
            | "mesh_coordinate"
            | "world_rank_of"
            | "group_rank_of"
    )
}

impl<'a> Interp<'a> {
    pub(super) fn comm_size(&mut self, c: usize) -> V<'a> {
        match &self.comms[c].members {
            Some(m) => V::Int(m.len() as i128),
            None => {
                self.needs_another_pass = true;
                V::opaque()
            }
        }
    }

    pub(super) fn comm_rank(&mut self, c: usize) -> V<'a> {
        match &self.comms[c].members {
            Some(m) => V::Int(m.iter().position(|&w| w == self.rank).expect("a member") as i128),
            None => {
                self.needs_another_pass = true;
                V::opaque()
            }
        }
    }

    /// What a communicator tells without communicating: its rank and size, members,
    /// names, and rank translation; `None` for a call that communicates.
    fn comm_query(&mut self, mc: &'a ExprMethodCall, c: usize, m: &str) -> Result<Option<V<'a>>, Flow<'a>> {
        match m {
            "rank" => return Ok(Some(self.comm_rank(c))),
            "size" => return Ok(Some(self.comm_size(c))),
            // Device buffers go through the same methods (NCCL runs them in stream order,
            // so they are checked like blocking host ops); `stream()` is the CUDA stream.
            "clone" | "as_ref" | "borrow" => return Ok(Some(V::Comm(c))),
            // A `Result` holding a communicator (`split`'s, `subgroup`'s) is its value here.
            "map_err" | "context" | "with_context" | "unwrap" | "expect" => {
                self.args(&mc.args)?;
                return Ok(Some(V::Comm(c)));
            }
            "members" => {
                return Ok(Some(match &self.comms[c].members {
                    Some(m) => V::list(m.iter().map(|&w| V::Int(w as i128)).collect()),
                    None => V::opaque(),
                }))
            }
            "name" | "backend" | "stream" | "device_kind" => return Ok(Some(V::opaque())),
            // Rank translation: this rank's world rank, and the world rank of a member or
            // the member of a world rank (a `Result` at run time; `?` passes the value).
            "world_rank" => return Ok(Some(V::Int(self.rank as i128))),
            "mesh_coordinate" => {
                let args = self.args(&mc.args)?;
                let (Some(dims), Some(members)) = (args.first().and_then(int_list), &self.comms[c].members) else {
                    return Ok(Some(V::opaque()));
                };
                let dims: Vec<usize> = dims.iter().map(|&d| d.max(0) as usize).collect();
                let all: Vec<usize> = (0..dims.len()).collect();
                if dist_ops::mesh_problem(&dims, &all, members.len()).is_some() {
                    return Ok(Some(V::opaque())); // an error at run time
                }
                let me = members.iter().position(|&w| w == self.rank).expect("a member");
                let coord = dist_ops::mesh_coordinate(&dims, me);
                return Ok(Some(V::list(coord.into_iter().map(|x| V::Int(x as i128)).collect())));
            }
            "world_rank_of" | "group_rank_of" => {
                let args = self.args(&mc.args)?;
                let (Some(V::Int(x)), Some(members)) = (args.first(), &self.comms[c].members) else {
                    return Ok(Some(V::opaque()));
                };
                let found = if m == "world_rank_of" {
                    usize::try_from(*x).ok().and_then(|i| members.get(i).copied())
                } else {
                    members.iter().position(|&w| w as i128 == *x)
                };
                // Out of range or not a member: an error at run time, not decided here.
                return Ok(Some(found.map_or_else(V::opaque, |v| V::Int(v as i128))));
            }
            _ => {}
        }
        Ok(None)
    }

    pub(super) fn comm_method(&mut self, e: &'a Expr, mc: &'a ExprMethodCall, c: usize, m: &str) -> R<'a> {
        if let Some(v) = self.comm_query(mc, c, m)? {
            return Ok(v);
        }
        if self.speculative > 0 {
            // Record it, so `speculate` sees the communication and reports it.
            self.events.push(Ev::Wait { ids: vec![], site: self.site(e), call: call_name(m) });
            return Ok(V::Unit);
        }
        if m == "batch" || m == "batch_async" {
            return self.batch(e, mc, c, m);
        }
        // Numbers read from the program's inputs take this run's sample.
        let args: Vec<V<'a>> = self.args(&mc.args)?.into_iter().map(sampled).collect();
        match m {
            "send" | "recv" | "isend" | "irecv" | "send_object" | "recv_object" => {
                let (peer, tag) = (args.first(), args.get(1));
                let (Some(peer), Some(tag)) = (peer, tag) else { return Ok(V::Unit) };
                let id = self.post_p2p(e, c, m.starts_with("send") || m == "isend", peer, tag, &mc.args[0], m)?;
                if !m.ends_with("_object") {
                    self.set_p2p_len(id, args.get(2));
                }
                if m.starts_with("send") || m == "isend" {
                    self.note_sent(id, args.get(2).filter(|_| !m.ends_with("_object")));
                } else {
                    self.note_received(id);
                }
                if m.starts_with('i') {
                    return Ok(V::Req(vec![id]));
                }
                self.events.push(Ev::Wait { ids: vec![id], site: self.site(e), call: call_name(m) });
                self.blocked_here()?;
                // A received value is data: unknown to the check.
                return Ok(if m == "recv_object" {
                    V::data(fp_of(&[&V::Name(self.comms[c].key.clone()), peer, tag]))
                } else {
                    V::Unit
                });
            }
            "recv_any" | "irecv_any" => {
                let Some(tag) = args.first() else { return Ok(V::Unit) };
                let id = self.post_p2p_any(e, c, tag, m)?;
                // (Its buffer's length: the most it takes.)
                self.set_p2p_len(id, args.get(1));
                self.any_source(c, id, tag);
                self.note_received(id);
                if m == "irecv_any" {
                    if let Some(k) = self.incoming().map(|m| m.len() as i128) {
                        self.any_counts.insert(id, k);
                    }
                    return Ok(V::Req(vec![id]));
                }
                self.events.push(Ev::Wait { ids: vec![id], site: self.site(e), call: call_name(m) });
                self.blocked_here()?;
                return Ok(self.status_of(c, id, true));
            }
            "sendrecv" | "sendrecv_replace" => {
                if args.len() < 4 {
                    return Ok(V::Unit);
                }
                // (dst, tag, send, src, recv), or (dst, tag, buf, src): one buffer sent,
                // then received into.
                let (name, into): (&'static str, usize) =
                    if m == "sendrecv" { ("sendrecv", 4) } else { ("sendrecv_replace", 2) };
                let a = self.post_p2p(e, c, true, &args[0], &args[1], &mc.args[0], name)?;
                self.set_p2p_len(a, args.get(2));
                self.note_sent(a, args.get(2));
                let b = self.post_p2p(e, c, false, &args[3], &args[1], &mc.args[3], name)?;
                self.set_p2p_len(b, args.get(into));
                self.note_received(b);
                self.events.push(Ev::Wait { ids: vec![a, b], site: self.site(e), call: name });
                self.blocked_here()?;
                return Ok(V::Unit);
            }
            "subgroup" | "subgroup_ordered" | "split" | "mesh2" | "mesh" | "submesh" | "mesh_group" | "shrink" => {
                return self.create(e, mc, c, m, &args)
            }
            // The recovery vocabulary, in the run the check proves: no rank dies, so no
            // rank is found failed, and an agreement is a collective whose flag is the
            // same on its members.
            "failed_ranks" => return Ok(V::List(std::rc::Rc::new(Vec::new()))),
            "revoke" => return Ok(V::Unit),
            "agree" => {
                let spec = dist_ops::find("agree").expect("agree is in the op table");
                self.collective(e, mc, c, m, spec, &args)?;
                let all = self.comms[c].members.as_ref().is_some_and(|m| m.len() == self.size);
                let flag = if all { V::Agreed } else { V::opaque() };
                return Ok(V::Tuple(vec![flag, V::List(std::rc::Rc::new(Vec::new()))]));
            }
            _ => {}
        }
        // Roles of the arguments come from the op table the runtime is tested against.
        if let Some(spec) = dist_ops::find(m).filter(|o| o.class == dist_ops::Class::Collective) {
            return self.collective(e, mc, c, m, spec, &args);
        }
        Err(undecidable(e, format!("the communicator method `{m}`")))
    }

    /// `c.batch(|b| { .. })` (or `batch_async`): the sends and receives the closure posts
    /// on `b`, waited together (or returned as one request).
    fn batch(&mut self, e: &'a Expr, mc: &'a ExprMethodCall, c: usize, m: &str) -> R<'a> {
        let Some(Expr::Closure(cl)) = mc.args.first() else {
            return Err(undecidable(e, format!("`{m}` with something other than a closure `|b| {{ .. }}`")));
        };
        let start = self.next_id;
        self.scoped(|me| -> Result<(), Flow<'a>> {
            if let Some(p) = cl.inputs.first() {
                me.bind(p, V::Batch(c));
            }
            me.expr(&cl.body)?;
            Ok(())
        })?;
        let ids: Vec<usize> = (start..self.next_id).collect();
        if m == "batch_async" {
            return Ok(V::Req(ids));
        }
        self.events.push(Ev::Wait { ids, site: self.site(e), call: "batch" });
        Ok(V::Unit)
    }

    /// A collective of the op table (`spec`) on `c` with `args`: its root and op checked,
    /// its buffers' lengths, posted for the simulation; a request for the `_async` forms.
    fn collective(
        &mut self,
        e: &'a Expr,
        mc: &'a ExprMethodCall,
        c: usize,
        m: &str,
        spec: &dist_ops::OpSpec,
        args: &[V<'a>],
    ) -> R<'a> {
        let (ri, oi) = (spec.root, spec.reduce);
        if let Some(i) = ri.filter(|&i| i < mc.args.len()) {
            self.check_numbering(e, c, "root", &mc.args[i])?;
            if super::strict()
                && self.comms[c].members.is_some()
                && !matches!(args.get(i), Some(V::Int(_) | V::Agreed | V::Uniform))
            {
                return Err(self.data_dependent(&mc.args[i], "root", m));
            }
        }
        if let Some(i) = oi.filter(|&i| i < mc.args.len()) {
            let named = matches!(&mc.args[i], Expr::Call(_));
            if super::strict() && !named && !matches!(args.get(i), Some(V::Name(_))) {
                return Err(self.data_dependent(&mc.args[i], "reduce op", m));
            }
        }
        let root = match ri.and_then(|i| args.get(i)) {
            Some(V::Int(r)) => {
                let r = *r;
                self.check_peer(e, c, r, "root", &mc.args[ri.expect("root index")])?;
                Some(r)
            }
            _ => None,
        };
        if let (Some(i), Some(buf)) = (oi, mc.args.first()) {
            if let Some(o) = mc.args.get(i) {
                self.check_op_type(e, m, buf, o)?;
            }
        }
        let op = match oi.and_then(|i| args.get(i)) {
            Some(V::Name(n)) => Some(n.clone()),
            _ => match oi.and_then(|i| mc.args.get(i)) {
                Some(Expr::Call(call)) => match &*call.func {
                    // `PreMulSum(scale)` with a scale the check knows: the scale is part of
                    // the op, which every rank must pass alike (`1.0 / rows` of each
                    // rank's own rows is not).
                    Expr::Path(p) if last_seg(&p.path) == "PreMulSum" && call.args.len() == 1 => {
                        Some(match self.expr(&call.args[0])? {
                            V::Float(x, _) => format!("PreMulSum({x:?})"),
                            V::Int(x) => format!("PreMulSum({:?})", x as f64),
                            _ => "PreMulSum".into(),
                        })
                    }
                    Expr::Path(p) => Some(last_seg(&p.path)),
                    _ => None,
                },
                _ => None,
            },
        };
        // The first buffer of these is the same length on every rank.
        let base = m.trim_end_matches("_async");
        let uniform = matches!(
            base,
            "all_reduce" | "broadcast" | "reduce" | "all_gather" | "reduce_scatter" | "all_to_all" | "scan" | "exscan"
        );
        let len = match base {
            // A scatter's receive buffer, a gather's send buffer.
            "scatter" => args.get(1).and_then(buf_len),
            "gather" => args.first().and_then(buf_len),
            _ if uniform => args.first().and_then(buf_len),
            _ => None,
        };
        let (counts, a2a) = match self.check_lengths(e, mc, c, base, args, root) {
            Ok(x) => x,
            Err(stop @ Flow::Stop(Stop::Invalid { .. })) => {
                self.keep_invalid_call((e, mc, c, base, args), root, op)?;
                return Err(stop);
            }
            Err(other) => return Err(other),
        };
        // A root that is data computed on each rank: its hash, for the ranks' roots
        // to be compared ([`sim::check`]).
        let data_root = match ri.and_then(|i| Some((args.get(i)?, mc.args.get(i)?))) {
            Some((V::Opaque { comm: false, fp }, a)) if *fp != 0 => Some((*fp, super::trace::expr_text(a))),
            _ => None,
        };
        let unproven = self.unproven_agreement(mc, m, spec, args);
        let id = self.post_coll(e, c, base, root, op)?;
        if let Some(Ev::Coll { len: l, root_data, unproven: u, counts: k, a2a: x, .. }) = self.events.last_mut() {
            *l = len;
            *root_data = data_root;
            *u = unproven;
            *k = counts;
            *x = a2a;
        }
        if !spec.blocking {
            return Ok(V::Req(vec![id]));
        }
        self.events.push(Ev::Wait { ids: vec![id], site: self.site(e), call: call_name(m) });
        // `gather_object` hands its root `Some` of what the ranks sent (data) and every
        // other rank `None`: a `match` on it that leaves early off the root
        // (`None => return Ok(None)`) follows the rank, not data.
        if m == "gather_object" {
            if let (Some(r), V::Int(me)) = (root, self.comm_rank(c)) {
                let got = V::data(fp_of(&[&V::Name(self.comms[c].key.clone()), &V::Int(id as i128)]));
                return Ok(V::Opt((me == r).then(|| Box::new(got))));
            }
        }
        Ok(V::Unit)
    }

    /// In the default mode, the root or reduce op of a collective that the check cannot
    /// prove the same on every rank: neither known, nor read from the program's inputs,
    /// nor left alike by a collective of every rank, nor data computed exactly (whose
    /// hash the ranks' traces compare). What it is and why, for a warning once the size
    /// shows no problem (under `strict` such an argument is an error at once).
    fn unproven_agreement(
        &self,
        mc: &'a ExprMethodCall,
        m: &str,
        spec: &dist_ops::OpSpec,
        args: &[V<'a>],
    ) -> Option<String> {
        if super::strict() {
            return None;
        }
        let alike = |v: Option<&V<'a>>| match v {
            Some(V::Int(_) | V::Agreed | V::Uniform | V::Name(_)) => true,
            Some(V::Opaque { comm: false, fp }) => value::is_exact(*fp),
            _ => false,
        };
        let root = spec.root.filter(|&i| i < mc.args.len() && !alike(args.get(i))).map(|i| (i, "root"));
        let op = spec
            .reduce
            .filter(|&i| i < mc.args.len() && !matches!(&mc.args[i], Expr::Call(_)) && !alike(args.get(i)))
            .map(|i| (i, "reduce op"));
        let (i, role) = root.or(op)?;
        Some(self.data_dependent_what(&mc.args[i], role, m))
    }

    /// A rank of another communicator's numbering, passed unchanged as a root or peer of
    /// communicator `c`: the mix-up a port from torch (whose `src=`/`dst=` are world
    /// ranks) makes silently. Checked whatever the value (known or data).
    pub(super) fn check_numbering(&self, e: &'a Expr, c: usize, what: &str, arg: &'a Expr) -> Result<(), Flow<'a>> {
        let Some(members) = &self.comms[c].members else { return Ok(()) };
        // A rank of another communicator's numbering, passed unchanged: the mix-up a
        // port from torch (whose `src=`/`dst=` are world ranks) makes silently.
        if let Some(k) = self.numbering_of(arg).filter(|&k| k != c) {
            if self.comms[k].members.as_ref().is_some_and(|m| m != members) {
                let text = crate::check::trace::expr_text(arg);
                let name = |i: usize| {
                    let k = &self.comms[i];
                    if k.key == "world" {
                        "the world (`Comm<World>`)".to_string()
                    } else {
                        format!("a `Comm<{}>` (world ranks {})", k.group, join(k.members.as_deref().unwrap_or(&[])))
                    }
                };
                let var = |i: usize| self.comm_var(i).unwrap_or_else(|| format!("the Comm<{}>", self.comms[i].group));
                let fix = if self.comms[c].key == "world" {
                    format!("translate it with `{}.world_rank_of({text})?` (torch's `get_global_rank`)", var(k))
                } else {
                    format!("translate it with `{}.group_rank_of({text})?` (torch's `get_group_rank`)", var(c))
                };
                return Err(Flow::Stop(Stop::Invalid {
                    site: self.site(e),
                    msg: format!(
                        "{what} `{text}` is a rank of {}, passed to {}: the ranks a communicator takes are its \
                         own, 0..{} in its numbering (MPI's rule, torch's `group_src`/`group_dst`; torch's plain \
                         `src`/`dst` are world ranks); {fix}",
                        name(k),
                        name(c),
                        members.len()
                    ),
                }));
            }
        }
        Ok(())
    }

    /// A variable holding communicator `c`, for messages.
    fn comm_var(&self, c: usize) -> Option<String> {
        self.scopes_iter()
            .find_map(|(name, v)| (*v == V::Comm(c) && !name.starts_with('\u{0}')).then(|| name.to_string()))
    }

    pub(super) fn check_peer(&self, e: &'a Expr, c: usize, p: i128, what: &str, arg: &'a Expr) -> Result<(), Flow<'a>> {
        let Some(members) = &self.comms[c].members else { return Ok(()) };
        self.check_numbering(e, c, what, arg)?;
        let n = members.len() as i128;
        if p < 0 || p >= n {
            let comm = &self.comms[c];
            let ranks = if n == 1 { "1 rank".to_string() } else { format!("{n} ranks") };
            let ctx = if comm.key == "world" {
                format!("the world has {ranks}")
            } else {
                format!("`{}` has {ranks} here", comm.group)
            };
            let text = crate::check::trace::expr_text(arg);
            let value = if text == p.to_string() { format!("{what} {p}") } else { format!("{what} `{text}` = {p}") };
            let pin = "pin the sizes this program supports with #[spmd(sizes = A..=B)]";
            // The fix that is right: a world rank given to a group (a port of torch's
            // `src=2, group=g`) is translated, never wrapped (`% n` names another rank);
            // a neighbour computed by arithmetic wraps or is guarded.
            let fix = match members.iter().position(|&w| w as i128 == p) {
                Some(k) if comm.key != "world" => format!(
                    "if `{text}` is a world rank (torch's `src=`/`dst=` are), translate it with `{}.group_rank_of({text})?` \
                     (world rank {p} is rank {k} of `{}`); otherwise guard the call, or {pin}",
                    self.comm_var(c).unwrap_or_else(|| format!("the Comm<{}>", comm.group)),
                    comm.group
                ),
                None if comm.key != "world" && (0..self.size as i128).contains(&p) => format!(
                    "world rank {p} is not a member of `{}` (world ranks {}), so no translation names it either; \
                     use a member, guard the call, or {pin}",
                    comm.group,
                    join(members)
                ),
                _ if text.contains('+') || text.contains('-') => {
                    format!("wrap it (`% n`) if the neighbours form a ring, guard the call, or {pin}")
                }
                _ => format!("guard the call, or {pin}"),
            };
            return Err(Flow::Stop(Stop::Invalid {
                site: self.site(e),
                msg: format!(
                    "{value} on rank {} at world size {} is out of range: {ctx} (0..{n}); {fix}",
                    self.rank, self.size
                ),
            }));
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn post_p2p(
        &mut self,
        e: &'a Expr,
        c: usize,
        send: bool,
        peer: &V<'a>,
        tag: &V<'a>,
        arg: &'a Expr,
        call: &str,
    ) -> Result<usize, Flow<'a>> {
        self.check_numbering(e, c, if send { "the destination" } else { "the source" }, arg)?;
        let V::Int(p) = *peer else {
            return Err(undecidable(
                arg,
                format!("the peer `{}` of `{call}`, which depends on data", arg.to_token_stream()),
            ));
        };
        if self.comms[c].members.is_none() {
            self.needs_another_pass = true;
            return Ok(self.fresh_id());
        }
        self.check_peer(e, c, p, if send { "the destination" } else { "the source" }, arg)?;
        let world_peer = self.comms[c].members.as_ref().expect("resolved")[p as usize];
        self.record_p2p(e, c, send, world_peer, tag, call)
    }

    /// The length of the buffer of the send or receive `id` just posted.
    pub(super) fn set_p2p_len(&mut self, id: usize, buf: Option<&V<'a>>) {
        if let Some(Ev::P2p { id: x, len, .. }) = self.events.last_mut() {
            if *x == id {
                *len = buf.and_then(buf_len);
            }
        }
    }

    /// A collective this rank's arguments make invalid, kept with its root and counts
    /// apart from the trace: where the ranks' roots or count lists differ, that is the
    /// error to name, not what this rank made of its own buffers (`passes::verdict_of`;
    /// `counts[rank]` is not this rank's length on every rank).
    fn keep_invalid_call(
        &mut self,
        (e, mc, c, base, args): (&'a Expr, &'a ExprMethodCall, usize, &str, &[V<'a>]),
        root: Option<i128>,
        op: Option<String>,
    ) -> Result<(), Flow<'a>> {
        let v = matches!(base, "all_gather_v" | "gather_v" | "scatter_v" | "reduce_scatter_v");
        let counts = v.then(|| CallArgs { it: self, e, mc, base, args }.counts(2)).flatten();
        self.post_coll(e, c, base, root, op)?;
        if let Some(Ev::Coll { counts: k, .. }) = self.events.last_mut() {
            *k = counts;
        }
        self.invalid_call = self.events.pop();
        Ok(())
    }

    /// The lengths a collective's buffers must have on this rank, given its counts or
    /// the other buffer (what the runtime refuses with an error, here at compile time),
    /// and the counts every rank must pass alike, for the simulation to compare. (Long as
    /// one `match` over the collective.)
    #[allow(clippy::type_complexity)]
    fn check_lengths(
        &self,
        e: &'a Expr,
        mc: &'a ExprMethodCall,
        c: usize,
        base: &str,
        args: &[V<'a>],
        root: Option<i128>,
    ) -> Result<(Option<Counts>, Option<A2a>), Flow<'a>> {
        let Some(members) = &self.comms[c].members else { return Ok((None, None)) };
        if crate::check::sim::paths_only() {
            return Ok((None, None));
        }
        let n = members.len() as i128;
        let Some(me) = members.iter().position(|&w| w == self.rank) else { return Ok((None, None)) };
        let me_i = me as i128;
        let a = CallArgs { it: self, e, mc, base, args };
        let counts_arg = a.counts_arg(n)?;
        let is_root = root.map(|r| r == me_i);
        match base {
            "all_gather" => {
                if let Some(l) = a.len(0) {
                    a.want(1, "receive", n * l, "size() × send.len()")?;
                }
            }
            "all_gather_v" => {
                if let Some(k) = a.counts_at(2) {
                    a.want(0, "send", k[me], &format!("`{}[{me}]`", a.name(2)))?;
                    a.want(1, "receive", k.iter().sum(), &format!("the sum of `{}`", a.name(2)))?;
                } else if let Some(k) = a.count_forms(2) {
                    a.want_form(0, "send", k.get(me), &format!("`{}[{me}]`", a.name(2)))?;
                    a.want_form(1, "receive", forms::sum(&k).as_ref(), &format!("the sum of `{}`", a.name(2)))?;
                }
            }
            // (The value only the root gives, whatever its type.)
            "broadcast_object" | "scatter_object" => match (is_root, a.opt_given(0)) {
                (Some(true), Some(false)) => {
                    return Err(a.misplaced(format!(
                        "rank {me} is the root and must pass `Some(..)` for the value, not `None`"
                    )))
                }
                (Some(false), Some(true)) => {
                    return Err(a.misplaced(format!(
                        "rank {me} is not the root ({}) and must pass `None` for the value",
                        root.unwrap_or_default()
                    )))
                }
                _ => {}
            },
            "gather" | "gather_v" | "scatter" | "scatter_v" => {
                let (mine, all) = if base.starts_with("gather") { (0, 1) } else { (1, 0) };
                let (mine_role, all_role) =
                    if base.starts_with("gather") { ("send", "receive") } else { ("receive", "send") };
                match (is_root, a.opt_given(all)) {
                    (Some(true), Some(false)) => {
                        return Err(a.misplaced(format!(
                            "rank {me} is the root and must pass `Some(..)` for the {all_role} buffer, not `None`"
                        )))
                    }
                    (Some(false), Some(true)) => {
                        return Err(a.misplaced(format!(
                            "rank {me} is not the root ({}) and must pass `None` for the {all_role} buffer",
                            root.unwrap_or_default()
                        )))
                    }
                    _ => {}
                }
                if base.ends_with("_v") {
                    if let Some(k) = a.counts_at(2) {
                        a.want(mine, mine_role, k[me], &format!("`{}[{me}]`", a.name(2)))?;
                        if is_root == Some(true) {
                            a.want(all, all_role, k.iter().sum(), &format!("the sum of `{}`", a.name(2)))?;
                        }
                    } else if let Some(k) = a.count_forms(2) {
                        a.want_form(mine, mine_role, k.get(me), &format!("`{}[{me}]`", a.name(2)))?;
                        if is_root == Some(true) {
                            let sum = forms::sum(&k);
                            a.want_form(all, all_role, sum.as_ref(), &format!("the sum of `{}`", a.name(2)))?;
                        }
                    }
                } else if let (Some(l), Some(true)) = (a.len(mine), is_root) {
                    a.want(all, all_role, n * l, &format!("size() × {mine_role}.len()"))?;
                }
            }
            "reduce_scatter" => {
                if let Some(l) = a.len(1) {
                    a.want(0, "send", n * l, "size() × recv.len()")?;
                }
            }
            "reduce_scatter_v" => {
                if let Some(k) = a.counts_at(2) {
                    a.want(1, "receive", k[me], &format!("`{}[{me}]`", a.name(2)))?;
                    a.want(0, "send", k.iter().sum(), &format!("the sum of `{}`", a.name(2)))?;
                } else if let Some(k) = a.count_forms(2) {
                    a.want_form(1, "receive", k.get(me), &format!("`{}[{me}]`", a.name(2)))?;
                    a.want_form(0, "send", forms::sum(&k).as_ref(), &format!("the sum of `{}`", a.name(2)))?;
                }
            }
            "all_to_all_v" => {
                for (ci, bi, role) in [(1, 0, "send"), (3, 2, "receive")] {
                    if let Some(k) = a.counts_at(ci) {
                        if k.len() as i128 != n {
                            return Err(a.bad(format!(
                                "`{}` has {} entries but the communicator has {n} ranks",
                                a.name(ci),
                                k.len()
                            )));
                        }
                        a.want(bi, role, k.iter().sum(), &format!("the sum of `{}`", a.name(ci)))?;
                    } else if let Some(k) = a.count_forms(ci) {
                        a.want_form(bi, role, forms::sum(&k).as_ref(), &format!("the sum of `{}`", a.name(ci)))?;
                    }
                }
                if let (Some(s), Some(r)) = (a.counts_at(1), a.counts_at(3)) {
                    // What a rank sends itself is what it receives from itself.
                    if s.get(me) != r.get(me) {
                        return Err(a.bad(format!(
                            "`{}[{me}]` is {} but `{}[{me}]` is {}: what rank {me} sends itself is what it \
                             receives from itself, so the two must be equal",
                            a.name(1),
                            s.get(me).copied().unwrap_or_default(),
                            a.name(3),
                            r.get(me).copied().unwrap_or_default()
                        )));
                    }
                    let known = |k: Vec<i128>| k.into_iter().map(Count::Known).collect();
                    return Ok((None, Some(A2a::Counts(known(s), known(r)))));
                }
                // Counts that are data: compared across ranks by what they were computed
                // from, what was received traced to its sender ([`super::resolve`]).
                if let (Some(s), Some(r)) = (args.get(1), args.get(3)) {
                    if let (Some(s), Some(r)) = (self.counts_of(s, Some(n)), self.counts_of(r, Some(n))) {
                        if s.len() as i128 == n && r.len() as i128 == n {
                            return Ok((None, Some(A2a::Counts(s, r))));
                        }
                    }
                }
            }
            // What an `all_to_all` sends, item by item, for the counts computed from what
            // arrived to be traced back to it. (Its count on the communicator: the one
            // this call is about to take.)
            "all_to_all" => {
                if let Some(l) = a.len(0) {
                    if l % n != 0 {
                        return Err(a.bad(format!(
                            "its send buffer `{}` has {l} elements, not a multiple of the communicator size {n}",
                            a.text(0)
                        )));
                    }
                    a.want(1, "receive", l, "the same as send")?;
                }
                let sent = args.first().and_then(|v| self.counts_of(v, a.len(1)));
                return Ok((None, sent.map(|items| A2a::Sent(self.comms[c].colls + 1, items))));
            }
            _ => {}
        }
        Ok((counts_arg.and_then(|i| a.counts(i)), None))
    }

    /// Records a posted send or receive with `peer` (a world rank, or [`ANY_SOURCE`]).
    fn record_p2p(
        &mut self,
        e: &'a Expr,
        c: usize,
        send: bool,
        peer: usize,
        tag: &V<'a>,
        call: &str,
    ) -> Result<usize, Flow<'a>> {
        let tag = match tag {
            V::Tag(t) => t.clone(),
            V::Name(n) => n.clone(),
            _ => return Err(undecidable(e, format!("the tag of `{call}`, which is not a `Tag` constant"))),
        };
        let id = self.fresh_id();
        self.events.push(Ev::P2p {
            id,
            send,
            comm: self.comms[c].key.clone(),
            group: self.comms[c].group.clone(),
            peer,
            tag,
            site: self.site(e),
            call: call_name(call),
            len: None,
        });
        Ok(id)
    }

    /// A receive from any source: its peer is [`ANY_SOURCE`] until the simulation finds
    /// the one rank that can send it (or reports the race).
    pub(super) fn post_p2p_any(&mut self, e: &'a Expr, c: usize, tag: &V<'a>, call: &str) -> Result<usize, Flow<'a>> {
        if self.comms[c].members.is_none() {
            self.needs_another_pass = true;
            return Ok(self.fresh_id());
        }
        self.record_p2p(e, c, false, crate::check::trace::ANY_SOURCE, tag, call)
    }

    /// The status of the receive from any source `id` on communicator `c`: its sender
    /// where a previous pass resolved it, and its count where the message is known (the
    /// one just posted, or, completed later, one of `irecv_any`) (else the count is data).
    pub(super) fn status_of(&self, c: usize, id: usize, just_posted: bool) -> V<'a> {
        let src = self.any_sources.get(&id).and_then(|w| {
            self.comms[c].members.as_ref().and_then(|m| m.iter().position(|x| x == w)).map(|g| g as i128)
        });
        let count = match just_posted {
            true => self.incoming().map(|m| m.len() as i128),
            false => self.any_counts.get(&id).copied(),
        };
        V::Status(src, count)
    }

    pub(super) fn post_coll(
        &mut self,
        e: &'a Expr,
        c: usize,
        kind: &str,
        root: Option<i128>,
        op: Option<String>,
    ) -> Result<usize, Flow<'a>> {
        let id = self.fresh_id();
        let Some(members) = self.comms[c].members.clone() else {
            self.needs_another_pass = true;
            return Ok(id);
        };
        self.events.push(Ev::Coll {
            id,
            comm: self.comms[c].key.clone(),
            group: self.comms[c].group.clone(),
            members,
            kind: call_name(kind),
            root,
            op,
            len: None,
            root_data: None,
            unproven: None,
            counts: None,
            a2a: None,
            site: self.site(e),
        });
        Ok(id)
    }
}
