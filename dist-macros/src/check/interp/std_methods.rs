//! Method calls: the std methods the check understands (Option/Result, strings, inputs;
//! numbers in `numbers.rs`, lists and iterators in `lists.rs`), and the hand-off of
//! communicator methods to the model.

use super::super::trace::Ev;
use super::*;
use syn::{Expr, ExprMethodCall};

impl<'a> Interp<'a> {
    pub(super) fn method(&mut self, e: &'a Expr, mc: &'a ExprMethodCall) -> R<'a> {
        if let Some(v) = self.entry_value(mc)? {
            return Ok(v);
        }
        let recv = self.expr(&mc.receiver)?;
        let m = mc.method.to_string();
        if let Some(v) = self.package_method(e, mc, &recv, &m)? {
            return Ok(v);
        }
        if let Some(v) = self.comm_value_method(e, mc, &recv, &m)? {
            return Ok(v);
        }
        // One of the package's iterators (`Schedule::new(r, n).filter_map(..)`): its items.
        let recv =
            if iterators::iterator_method(&m) { self.package_iterator_items(e, &recv)?.unwrap_or(recv) } else { recv };
        if let V::Struct(ty, entries) = &recv {
            if let Some(kind) = Coll::of(ty) {
                let args = self.args(&mc.args)?;
                if let Some(r) = self.coll_method(mc, kind, ty, entries, &m, &args)? {
                    return Ok(r);
                }
            }
        }
        if self.resize_known(mc, &recv, &m)? {
            return Ok(V::Unit);
        }
        // (`push` onto data the check cannot see into: what was pushed is in it now.)
        let pushed_onto_data =
            matches!(recv, V::Opaque { comm: false, .. }) && matches!(m.as_str(), "push" | "push_back");
        // A method of the standard library on exact values with exact arguments (no
        // closure) leaves its receiver exact (`sets[a].insert(b)` on a set built from the
        // inputs).
        let root = super::eval::place_root(&mc.receiver);
        let exact_in = value::exact_class(&recv)
            && root.as_deref().and_then(|r| self.lookup(r)).is_some_and(value::exact_class)
            && mc.args.iter().all(|a| !matches!(a, Expr::Closure(_)));
        lists::take_stored();
        let r = self.std_method(e, mc, recv, &m)?;
        // (A list method that stored its receiver exactly: nothing to forget.)
        if lists::take_stored() {
            self.clobber_loans(&mc.args, false);
            return Ok(r);
        }
        // (The arguments are in the result: the generic rule computes it from them and
        // the receiver, exactly only where all of them are.)
        let exact_in = exact_in && value::exact_class(&r) && !matches!(r, V::Unit);
        // What the method may have written: what it borrowed mutably, and its receiver
        // (computed from what it was and the arguments: the call's result's hash).
        self.clobber_loans(&mc.args, false);
        let salt = match &r {
            V::Opaque { fp, .. } => *fp,
            r => fp_of(&[r]),
        };
        if let Some(keep_shape) = mutates_receiver(&mc.method) {
            self.clobber_place_with(&mc.receiver, keep_shape, salt);
        } else if pushed_onto_data {
            self.clobber_place_with(&mc.receiver, false, salt);
        } else {
            return Ok(r);
        }
        if exact_in {
            if let Some(v) = root.as_deref().and_then(|r| self.lookup(r)) {
                value::mark_exact(v);
            }
        }
        Ok(r)
    }

    /// What the closures among `args` write of the variables they captured, forgotten
    /// (computed as `salt` says) in the frame that made each: code the check does not
    /// run called them, any number of times.
    pub(super) fn forget_closure_writes(&mut self, args: &[V<'a>], salt: u64) {
        for a in args {
            let V::Closure(cl) = a else { continue };
            let paths = super::summary::written(cl.0);
            if paths.is_empty() {
                continue;
            }
            let away = (cl.1 != self.scopes.id()).then(|| self.frames.iter().position(|s| s.id() == cl.1)).flatten();
            if let Some(i) = away {
                std::mem::swap(&mut self.scopes, &mut self.frames[i]);
            }
            for p in paths.iter() {
                self.clobber_path(p, salt);
            }
            if let Some(i) = away {
                std::mem::swap(&mut self.scopes, &mut self.frames[i]);
            }
        }
    }

    /// A standard method on a value read from the program's inputs ([`V::Uniform`]).
    fn input_method_call(&mut self, recv: V<'a>, m: &str, args: &[V<'a>]) -> R<'a> {
        match m {
            // A number parsed from an input: this run's sample (the same on every rank).
            "parse" | "parse_from" => Ok(V::Int(super::parsed_input())),
            // A flag's value cut into pieces while a parser walks the command line
            // (`--lens 0,1,5`): this run's sample of pieces, each an input.
            "split" | "split_terminator" | "rsplit" | "split_whitespace" | "split_ascii_whitespace"
                if self.walking_args > 0 =>
            {
                Ok(V::list(vec![V::Uniform; super::uniform_number() as usize]))
            }
            "map" | "and_then" | "map_or" | "map_or_else" if !args.is_empty() => match args.last() {
                Some(f @ V::Closure(_)) => self.apply_fn(f, recv),
                _ => Ok(recv),
            },
            _ => {
                // (A closure run on its items, `args.iter().for_each(|a| ..)`: what it
                // writes of what it captured is forgotten.)
                self.forget_closure_writes(args, fp_of(&[&V::Name(m.to_string())]));
                Ok(recv)
            }
        }
    }

    /// After a communication call: its receive buffers hold what arrived, which the
    /// check does not know (a send's buffer and the role arguments stay as they were).
    fn written_by_comm(&mut self, mc: &'a ExprMethodCall, c: usize, m: &str) {
        let Some(spec) = dist_ops::find(m) else { return };
        if matches!(m, "send" | "isend") || spec.class == dist_ops::Class::Group {
            return;
        }
        // What a collective of every rank leaves in its buffers is the same on every rank.
        let every = |me: &Self| matches!(&me.comms[c].members, Some(m) if m.len() == me.size);
        let base = m.trim_end_matches("_async");
        if spec.class == dist_ops::Class::Collective {
            self.comms[c].colls += 1;
        }
        let agreed = matches!(base, "all_reduce" | "broadcast" | "all_gather") && every(self);
        // What arrives otherwise differs from rank to rank as far as the check knows, by
        // what it came from ([`V::Opaque`]'s `fp`): a receive's peer and tag (two ranks
        // receiving from one peer under one tag may get the same), the group of a
        // reduction over part of the ranks, the receiving rank for a scatter, an
        // all-to-all or a reduce-scatter (each rank gets its own part).
        let key = V::Name(self.comms[c].key.clone());
        // (The receive this call posted is among its last events: its post, its wait.)
        let posted = || {
            self.events.iter().rev().take(4).find_map(|ev| match ev {
                Ev::P2p { send: false, peer, tag, .. } => Some((*peer, tag.clone())),
                _ => None,
            })
        };
        let salt = match p2p_receives(m).then(posted).flatten() {
            Some((peer, tag)) => fp_of(&[&key, &V::Int(peer as i128), &V::Name(tag)]),
            _ if matches!(base, "all_reduce" | "broadcast" | "all_gather") => fp_of(&[&key, &V::Name(base.into())]),
            _ => fp_of(&[&key, &V::Name(base.into()), &V::Int(self.rank as i128)]),
        };
        // A broadcast whose root is its members' lowest world rank (the ranks run in
        // order): what the root held is what arrives ([`Self::take_from_root`]).
        let bcast = (base == "broadcast").then(|| self.broadcast_seen(c)).flatten();
        // An op with a buffer of its own to send (`all_gather(send, recv)`) writes only
        // what comes after it; the in-place ones write their one buffer.
        let in_place = matches!(base, "all_reduce" | "broadcast" | "reduce" | "scan" | "exscan");
        let first_buffer = (0..mc.args.len()).find(|i| {
            !(spec.peers.contains(i) || spec.tag == Some(*i) || spec.root == Some(*i) || spec.reduce == Some(*i))
        });
        for (i, a) in mc.args.iter().enumerate() {
            let role = spec.peers.contains(&i) || spec.tag == Some(i) || spec.root == Some(i) || spec.reduce == Some(i);
            if role || (m == "sendrecv" && i != 4) {
                continue;
            }
            let sends_it = !in_place && Some(i) == first_buffer && !p2p_receives(m);
            if sends_it && !matches!(a, Expr::Reference(r) if r.mutability.is_some()) {
                continue;
            }
            let mut places = Vec::new();
            mut_loan_places(a, &mut places);
            // A variable that already is a `&mut` buffer, passed as it is.
            if let (true, Some(n)) = (places.is_empty() && matches!(a, Expr::Path(_)), place_root(a)) {
                if matches!(self.lookup(&n), Some(V::List(_) | V::Tuple(_))) {
                    places.push(a);
                }
            }
            for p in places {
                let v = self.place_value(p);
                // A message the check knows (its sender's numbers, from the last pass).
                if p2p_receives(m) {
                    if let Some(got) = v.as_ref().and_then(|v| self.take_incoming(v, salt)) {
                        if self.store(p, got).is_ok() {
                            continue;
                        }
                    }
                }
                if let (Some(v), Some(b)) = (&v, &bcast) {
                    if self.take_from_root(p, v, b, agreed) {
                        continue;
                    }
                }
                // An all-to-all's items, each named by its sender (counts exchanged for an
                // `all_to_all_v`).
                if base == "all_to_all" {
                    let site = mc as *const ExprMethodCall as usize;
                    if let Some(got) = v.as_ref().and_then(|v| self.received_items(c, site, v)) {
                        if self.store(p, got).is_ok() {
                            continue;
                        }
                    }
                }
                match v {
                    Some(v) if agreed => {
                        if self.store(p, agree(v)).is_err() {
                            self.clobber_place(p, true);
                        }
                    }
                    // Over part of the ranks: the same within each group of its call.
                    Some(v) if matches!(base, "all_reduce" | "broadcast" | "all_gather") => {
                        let call = V::data(fp_of(&[&V::Int(salt as i128), &V::Int(self.comms[c].colls as i128)]));
                        value::mark_exact(&call);
                        match self.group_uniform(v.clone(), c, base, salt) {
                            Some(v) if self.store(p, v.clone()).is_ok() => {}
                            // Groups not known: still alike on the call's members, whatever
                            // each held before (`if msg[0] == 1` after a sub-group's
                            // broadcast, where the root held a list and the others data).
                            _ if self.store(p, fill_indexed(v, call, &mut |x| x)).is_ok() => {}
                            _ => self.clobber_place_with(p, true, salt),
                        }
                    }
                    _ => self.clobber_place_with(p, true, salt),
                }
                // (What differs from rank to rank came from other ranks: a condition on
                // it may be tied to what they decided.)
                if !agreed {
                    if let Some(v) = self.place_value(p) {
                        value::mark_relayed(&v);
                    }
                }
            }
        }
    }

    /// The broadcast just posted on `c`: its key in [`Interp::roots`], whether this rank
    /// is its root, and whether the root is the lowest world rank of its members (so it
    /// ran before every other member in this pass). `None` where the root or the members
    /// are not known.
    fn broadcast_seen(&self, c: usize) -> Option<((String, u64), bool, bool)> {
        let (root, members) = self.events.iter().rev().take(4).find_map(|ev| match ev {
            Ev::Coll { kind, root: Some(r), members, .. } if kind.starts_with("broadcast") => {
                Some((*r, members.clone()))
            }
            _ => None,
        })?;
        let root = *members.get(usize::try_from(root).ok()?)?;
        let lowest = members.iter().min() == Some(&root);
        Some(((self.comms[c].key.clone(), self.comms[c].colls), root == self.rank, lowest))
    }

    /// A broadcast's buffer `p` (holding `v`), whose root ran first: the root notes what
    /// it held, and every member then holds it, its data the same on every member and
    /// told apart from another group's (a value the root computed from other ranks'
    /// values alike, such as a reduction's result, stays that value: a team's reduce,
    /// its leaders' all-reduce and the team's broadcast leave one value on every rank).
    /// Where the communicator is every rank, known numbers stay known and the rest is
    /// the same everywhere ([`agree`]). `false` where the generic rule applies: a root
    /// that is not the lowest rank, a value that is not plain data, a member that finds
    /// no note or one of another shape.
    fn take_from_root(&mut self, p: &'a Expr, v: &V<'a>, b: &((String, u64), bool, bool), every: bool) -> bool {
        let (key, is_root, lowest) = b;
        if !lowest {
            return false;
        }
        let held = if *is_root {
            let salt = fp_of(&[&V::Name(key.0.clone()), &V::Int(key.1 as i128)]);
            let mut i = 0;
            let Some(held) = root_held(v, salt, &mut i) else { return false };
            if self.speculative == 0 {
                self.roots.borrow_mut().insert(key.clone(), held.clone());
            }
            held
        } else {
            match self.roots.borrow().get(key) {
                Some(h) if same_shape(h, v) => h.clone(),
                _ => return false,
            }
        };
        let held = if every { agree_known(held) } else { held };
        self.store(p, held).is_ok()
    }

    /// What a collective over part of the ranks (`c`, made by a call that split its
    /// parent into groups) leaves in a buffer that held `v`: data the same on the ranks of
    /// each group, noted with the groups (`UNIFORM_OVER`). A reduction of such data over
    /// another communicator (`reduce`: a row's sum, then the column's) combines the
    /// groups its members stand for; where they are distinct on every rank and every
    /// rank's union is the whole world (a 2-D grid's rows, then columns), the result is
    /// exact data of its recipe: the same on every rank that made it by the same calls.
    /// `None` where the groups are not known (a split not resolved yet).
    fn group_uniform(&mut self, v: V<'a>, c: usize, base: &str, salt: u64) -> Option<V<'a>> {
        let groups = self.comms[c].groups.clone()?;
        let reduce = base == "all_reduce";
        // Data the same on every rank, combined within groups of one size on every rank
        // (a row of a grid, a rank alone): still the same on every rank. (Only where the
        // buffer held what goes in: in place; an all-gather's receive buffer held nothing.)
        if base != "all_gather"
            && same_everywhere(&v)
            && groups.of.iter().all(|&g| g != u32::MAX)
            && groups.lists.iter().all(|l| l.len() == groups.lists[0].len())
        {
            return Some(agree(v));
        }
        let over = |fp: u64| super::summary::UNIFORM_OVER.with(|u| u.borrow().get(&fp).cloned());
        // Which call this is, the same in every group: the communicator's creation (its
        // key without the group: "world/0/1") and its collective count.
        let creation: String =
            self.comms[c].key.split('/').map(|seg| seg.split(':').next().unwrap_or(seg)).collect::<Vec<_>>().join("/");
        let recipe = fp_of(&[&V::Name(creation), &V::Int(self.comms[c].colls as i128), &V::Name(base.into())]);
        // What the buffer held: data the same within the groups of one earlier call?
        let mut leaves = Vec::new();
        data_leaves(&v, &mut leaves);
        let held: Vec<Option<(super::groups::Groups, u64)>> = leaves.iter().map(|&fp| over(fp)).collect();
        let before = match held.first() {
            Some(Some((p, _)))
                if reduce && held.iter().all(|h| h.as_ref().is_some_and(|(q, _)| std::rc::Rc::ptr_eq(p, q))) =>
            {
                Some(p.clone())
            }
            _ => None,
        };
        // Each item's recipe: this call's, after what went in (an earlier reduction's).
        let composing = before.is_some();
        let item_recipe = |i: usize| match held.get(i).and_then(|h| h.as_ref()) {
            Some((_, r)) if composing => fp_of(&[&V::Int(*r as i128), &V::Int(recipe as i128)]),
            _ => fp_of(&[&V::Int(recipe as i128), &V::Int(i as i128)]),
        };
        let part = match before {
            Some(p) => match compose(&p, &groups, self.size) {
                // The same on every rank that made it by the same calls: exact data of its
                // recipe, so ranks that combined different values (one rank's `a`, another's
                // `b`) hold different data, and a condition on it is decided rank by rank.
                Composed::Everyone => {
                    let mut i = 0usize;
                    return Some(fill_uniform(v, &mut || {
                        let r = item_recipe(i);
                        i += 1;
                        V::derived(&[&V::Int(r as i128)])
                    }));
                }
                Composed::Groups(g) => g,
                Composed::Unknown => return None,
            },
            None => groups,
        };
        // (The call's count on its communicator too: two reductions over one row leave
        // different data, each noted with its own recipe.)
        let colls = self.comms[c].colls as i128;
        let mut i = 0usize;
        // (Exact: the same call on the same group leaves the same value, so a rank
        // whose `fp` agrees with another's holds what it holds.)
        let whole = V::data(fp_of(&[&V::Int(salt as i128), &V::Int(colls)]));
        value::mark_exact(&whole);
        Some(fill_indexed(v, whole, &mut |item| {
            let r = item_recipe(i);
            i += 1;
            if let V::Opaque { fp, .. } = item {
                super::summary::UNIFORM_OVER.with(|u| u.borrow_mut().insert(fp, (part.clone(), r)));
            }
            item
        }))
    }

    /// Whether what the closure computes is determined by its arguments: every variable
    /// it reads is known, the same on every rank or exact data ([`exact_class`]), and it
    /// reads no clock or entropy source.
    fn closure_exact(&self, c: Closure<'a>) -> bool {
        let body = &*c.0.body;
        super::summary::idents_of(body).iter().all(|i| {
            !matches!(i.as_str(), "now" | "elapsed" | "thread_rng" | "random" | "rng" | "from_entropy" | "from_os_rng")
                && self.lookup(i).is_none_or(|v| matches!(v, V::Closure(_)) || exact_class(v))
        })
    }

    /// Applies `f`, a closure or a method named by its path, to `x` (iterator adapters'
    /// functions).
    pub(super) fn apply_fn(&mut self, f: &V<'a>, x: V<'a>) -> R<'a> {
        match f {
            V::Closure(c) => self.apply_closure(*c, vec![x]),
            // A method named by its path (`.map(Vec::len)`, `.map(Clone::clone)`).
            V::Name(n) => Ok(match (n.rsplit("::").next().unwrap_or(n), &x) {
                ("len", V::List(l)) => V::Int(l.len() as i128),
                ("len", V::Range(a, b)) => V::Int((b - a).max(0)),
                ("is_empty", V::List(l)) => V::Bool(l.is_empty()),
                ("clone" | "to_vec" | "to_owned" | "from" | "into" | "identity", _) => x,
                _ => V::taint(&[&x]),
            }),
            _ => Ok(V::taint(&[f, &x])),
        }
    }

    /// A method of a communicator, a batch, or a request (`wait`).
    fn comm_value_method(
        &mut self,
        e: &'a Expr,
        mc: &'a ExprMethodCall,
        recv: &V<'a>,
        m: &str,
    ) -> Result<Option<V<'a>>, Flow<'a>> {
        match recv.clone() {
            V::Comm(c) => {
                let r = self.comm_method(e, mc, c, m)?;
                self.written_by_comm(mc, c, m);
                return Ok(Some(r));
            }
            V::Batch(c) if m == "send" || m == "recv" => {
                let args = self.args(&mc.args)?;
                let id = self.post_p2p(e, c, m == "send", &args[0], &args[1], &mc.args[0], call_name(m))?;
                self.set_p2p_len(id, args.get(2));
                if m == "send" {
                    self.note_sent(id, args.get(2));
                } else {
                    self.note_received(id);
                }
                self.written_by_comm(mc, c, m);
                return Ok(Some(V::Unit));
            }
            V::Batch(c) if m == "size" => {
                return Ok(Some(self.comm_size(c)));
            }
            // `req.test()`: not complete the first time it is asked, complete (a wait)
            // the next: one order the ranks can run in (a master polling for a result
            // while it works on its own share). `Option<Status>` for a receive from any
            // source, `bool` for other requests.
            V::Req(ids)
                if m == "test" && mc.args.is_empty() && self.polled.insert(ids.first().copied().unwrap_or(0)) =>
            {
                let any = self.events.iter().any(|ev| {
                    matches!(ev, Ev::P2p { id, peer, .. } if ids.contains(id) && *peer == crate::check::trace::ANY_SOURCE)
                });
                return Ok(Some(if any { V::Opt(None) } else { V::Bool(false) }));
            }
            V::Req(ids) if m == "wait" || m == "test" => {
                let any = self.events.iter().find_map(|ev| match ev {
                    Ev::P2p { id, peer, comm, .. } if ids.contains(id) && *peer == crate::check::trace::ANY_SOURCE => {
                        Some((*id, comm.clone()))
                    }
                    _ => None,
                });
                self.events.push(Ev::Wait { ids, site: self.site(e), call: if m == "wait" { "wait" } else { "test" } });
                // A receive from any source gives its status.
                if let Some((id, comm)) = any {
                    let c = self.comms.iter().position(|k| k.key == comm).unwrap_or(0);
                    let st = self.status_of(c, id, false);
                    return Ok(Some(if m == "wait" { st } else { V::Opt(Some(Box::new(st))) }));
                }
                return Ok(Some(if m == "wait" { V::Unit } else { V::Bool(true) }));
            }
            _ => {}
        }
        Ok(None)
    }

    /// `v.resize(k, fill)` / `resize_with(k, f)` with `k` known: a list of `k` items (the
    /// old ones, then the fill; on data the check does not hold, `k` items of it) stored
    /// back; `false` where the check does not follow it.
    fn resize_known(&mut self, mc: &'a ExprMethodCall, recv: &V<'a>, m: &str) -> Result<bool, Flow<'a>> {
        if matches!(m, "resize" | "resize_with")
            && mc.args.len() == 2
            && matches!(recv, V::List(_) | V::Opaque { comm: false, .. })
        {
            let (k, fill) = (self.expr(&mc.args[0])?, self.expr(&mc.args[1])?);
            if let V::Int(k) = k {
                if (0..=REPEAT_BOUND).contains(&k) && !fill.has_comm() {
                    let fill = if m == "resize" { fill } else { V::derived(&[&fill]) };
                    let items = match recv {
                        V::List(items) => {
                            let mut v = items.to_vec();
                            v.resize(k as usize, fill);
                            v
                        }
                        _ => (0..k).map(|i| V::derived(&[recv, &fill, &V::Int(i)])).collect(),
                    };
                    if self.store(&mc.receiver, V::list(items)).is_ok() {
                        return Ok(true);
                    }
                }
            }
        }
        Ok(false)
    }

    /// Methods of numbers and booleans the check computes (`x.clamp(lo, hi)`,
    /// `wrapping_add`, `(cy > 0).then(|| ..)`).
    fn scalar_method(
        &mut self,
        mc: &'a ExprMethodCall,
        recv: &V<'a>,
        m: &str,
        args: &[V<'a>],
    ) -> Result<Option<V<'a>>, Flow<'a>> {
        if let V::Int(x) = *recv {
            // `x.clamp(lo, hi)` (its arguments inputs: this run's sample).
            if let ("clamp", [lo, hi]) = (m, args) {
                if let (V::Int(lo), V::Int(hi)) = (sampled(lo.clone()), sampled(hi.clone())) {
                    if lo <= hi {
                        return Ok(Some(V::Int(x.clamp(lo, hi))));
                    }
                }
            }
            // A number from the program's inputs as the argument: this run's sample.
            let sampled = match args.first() {
                Some(V::Uniform) => Some(V::Int(super::uniform_number())),
                a => a.cloned(),
            };
            if m.starts_with("wrapping_") || m.starts_with("rotate_") {
                let width = numbers::int_width(&mc.receiver, self.fn_stack.last().copied());
                if let Some(r) = width.and_then(|w| numbers::wrapping(x, m, sampled.as_ref(), w)) {
                    return Ok(Some(r));
                }
            }
            if let Some(r) = numbers::int_method(x, m, sampled.as_ref()) {
                return Ok(Some(r));
            }
        }
        if let V::Float(x, same) = *recv {
            if let ("clamp", [V::Float(lo, s1), V::Float(hi, s2)]) = (m, args) {
                if lo <= hi {
                    return Ok(Some(V::Float(x.clamp(*lo, *hi), same && *s1 && *s2)));
                }
            }
            if let Some(r) = numbers::float_method(x, same, m, args.first()) {
                return Ok(Some(r));
            }
        }
        if let V::Bool(b) = *recv {
            match (m, args) {
                // `(cy > 0).then(|| rank - px)`: a neighbour that may not exist.
                ("then", [V::Closure(c)]) => {
                    return Ok(Some(V::Opt(if b { Some(Box::new(self.apply_closure(*c, vec![])?)) } else { None })))
                }
                ("then_some", [x]) => return Ok(Some(V::Opt(b.then(|| Box::new(x.clone()))))),
                // `holds.then(init_embedding)`: a function of the package called with no
                // argument where `b` holds; any other function's value is data. Whether it
                // is `Some` is known either way.
                ("then", [V::Name(f)]) => {
                    if !b {
                        return Ok(Some(V::Opt(None)));
                    }
                    // (Named as a call would be: this module's function of that name first.)
                    let key = self.module_key(&[], f).unwrap_or_else(|| f.clone());
                    let v = match self.file_fns.get(key.as_str()) {
                        Some(g) if g.sig.inputs.is_empty() => self.apply_with(g, vec![], vec![], None)?,
                        _ => V::opaque(),
                    };
                    return Ok(Some(V::Opt(Some(Box::new(v)))));
                }
                _ => {}
            }
        }
        Ok(None)
    }

    /// A method the check does not model, applying a closure to items that may be
    /// communicators (`layers.iter_mut().some_adapter(|l| l.forward(..))`), or a closure
    /// that calls an op on a communicator it captures: what the closure does is not
    /// followed, which the check says instead of passing over it.
    fn closure_over_comm(&self, e: &'a Expr, m: &str, recv: &V<'a>, args: &[V<'a>]) -> Result<(), Flow<'a>> {
        let calls_op = |c: &Closure<'a>| mentions_comm(self, &c.0.body.to_token_stream()) && calls_an_op(&c.0.body);
        if recv.has_comm() || args.iter().any(|a| matches!(a, V::Closure(c) if calls_op(c))) {
            return Err(undecidable(
                e,
                format!("`.{m}(..)` with a closure over a communicator (a method the check does not model)"),
            ));
        }
        Ok(())
    }

    /// A method of the standard library on a value the check holds: the program's
    /// inputs, string literals, options and results (`options.rs`), numbers
    /// (`numbers.rs`), lists (`lists.rs`); else data computed from the receiver and the
    /// arguments.
    fn std_method(&mut self, e: &'a Expr, mc: &'a ExprMethodCall, recv: V<'a>, m: &str) -> R<'a> {
        let m = m.to_string();
        let args = self.args(&mc.args)?;
        // A string literal (a flag's default, `"4".parse()`): known, and so is the
        // number it holds.
        if let V::Name(lit) = &recv {
            if let Some(text) = lit.strip_prefix('"').and_then(|l| l.strip_suffix('"')) {
                match m.as_str() {
                    "parse" => {
                        let t = text.trim();
                        return Ok(if let Ok(i) = t.parse::<i128>() {
                            V::Int(i)
                        } else if let Ok(b) = t.parse::<bool>() {
                            V::Bool(b)
                        } else if let Ok(x) = t.parse::<f64>() {
                            V::Float(x, true)
                        } else {
                            V::opaque()
                        });
                    }
                    "into" | "to_string" | "to_owned" | "clone" | "as_str" => return Ok(recv.clone()),
                    _ => {}
                }
            }
        }
        // A number read from the inputs bounded by known numbers (`cfg.top.min(len)`,
        // where `len` may be 0): this run's sample, so that the result stays within the
        // bound. (Other arithmetic methods on an input, `seq.div_ceil(tp)`, stay an
        // input: a value the same on every rank, sampled where used, as another input.)
        let bounded = matches!(m.as_str(), "min" | "max" | "clamp")
            && !args.is_empty()
            && args.iter().all(|a| matches!(a, V::Int(_)));
        let recv = if matches!(recv, V::Uniform) && bounded { super::value::sampled(recv) } else { recv };
        // The program's inputs: what is read from them stays an input (the same on every
        // rank); a number parsed from one is this run's sample of such numbers.
        if matches!(recv, V::Uniform) {
            return self.input_method_call(recv, &m, &args);
        }
        // A buffer too long to hold item by item, whose length the check knows.
        if let (Some(len), true) = (super::long::long_len(&recv), args.is_empty()) {
            match m.as_str() {
                "len" => return Ok(V::Int(len)),
                "is_empty" => return Ok(V::Bool(len == 0)),
                _ => {}
            }
        }
        // Lengths and sums of data as forms (`vec![0; total].len()`, `counts.iter().sum()`).
        if let Some(v) = super::forms::method(&recv, &m, &args) {
            return Ok(v);
        }
        // Arithmetic on data the same on every rank (`rr.sqrt()`, `a.max(b)`, `x.abs()`)
        // with arguments the same on every rank stays the same on every rank.
        if matches!(recv, V::Agreed) && !args.iter().any(|v| matches!(v, V::Closure(_))) {
            let same = mc.args.iter().zip(&args).all(|(a, v)| input_like(a, v));
            let mut all: Vec<&V> = args.iter().collect();
            all.push(&recv);
            return Ok(if same { V::Agreed } else { V::derived(&all) });
        }
        // Result/Option pass-throughs: the check assumes communication succeeds.
        if let Some(r) = self.wrapper_method(mc, &recv, &m, &args)? {
            return Ok(r);
        }
        // A number read from the inputs as the count or step of a method on numbers or
        // lists (`(0..n).step_by(node_size)`, `x.min(cap)`, `v.chunks(micro)`): this run's
        // sample, as in arithmetic. (An input may be a string too: `names.contains(&mode)`
        // keeps it an input.)
        let args: Vec<V<'a>> = if int_args(&m) {
            args.into_iter().map(|a| if matches!(a, V::Uniform) { super::value::sampled(a) } else { a }).collect()
        } else {
            args
        };
        if let Some(r) = self.scalar_method(mc, &recv, &m, &args)? {
            return Ok(r);
        }
        if let Some(items) = iter_items(&recv) {
            if let Some(r) = self.list_method(mc, recv.clone(), items, &m, &args)? {
                return Ok(r);
            }
        }
        // Pushing into data we cannot see: a request pushed there is lost to the check.
        if m == "push" && args.iter().any(|a| matches!(a, V::Req(_)) || a.has_comm()) {
            return Err(undecidable(e, "a request or communicator pushed into a collection the check cannot follow"));
        }
        if recv.has_comm() && dist_ops::find(&m).is_some_and(|o| o.class != dist_ops::Class::Group) {
            return Err(undecidable(e, format!("`.{m}(..)` on a value that may be a communicator")));
        }
        // A method of the package that may communicate, on a value that may hold a
        // communicator the check no longer sees into (a model whose layers a summarised
        // loop rewrote): which of them runs, and what it sends, is not followed.
        if recv.has_comm() && !matches!(recv, V::Struct(..)) && self.package_method_communicates(&m) {
            return Err(undecidable(e, format!("`.{m}(..)` on a value that may hold a communicator")));
        }
        if let V::Req(_) = &recv {
            // `req.is_done()` and the like: leave pending.
            return Ok(V::opaque());
        }
        // Data passed through as it is (`counts.iter().map(|&c| c as usize).collect()` of
        // a list the check holds as a whole): the same value, so the same hash.
        if matches!(recv, V::Opaque { comm: false, .. }) && passes_items_through(mc) {
            return Ok(recv);
        }
        let mut all: Vec<&V> = args.iter().collect();
        all.push(&recv);
        if args.iter().any(V::has_comm) {
            return Err(undecidable(e, format!("`.{m}(..)` called with a communicator argument")));
        }
        // A method of the standard library on numbers and lists computes from its
        // receiver and arguments alone; a closure it applies, from the item and what it
        // captures (`.map(|(x, y)| (x - y).abs())` on data computed exactly).
        if all.iter().any(|v| matches!(v, V::Closure(_))) {
            self.closure_over_comm(e, &m, &recv, &args)?;
            // (The closures run on items the check does not hold, as many times as there
            // are: what they write of the variables they captured is forgotten,
            // `.for_each(|&u| outgoing[owner(u)].push(u))` over data.)
            self.forget_closure_writes(&args, fp_of(&all));
            let mut vals: Vec<V<'a>> = Vec::new();
            for v in &all {
                match v {
                    V::Closure(c) if self.closure_exact(*c) => vals.push(V::Int(c.0 as *const _ as usize as i128)),
                    V::Closure(_) => return Ok(V::taint(&all)),
                    v => vals.push((*v).clone()),
                }
            }
            return Ok(V::derived(&vals.iter().collect::<Vec<_>>()));
        }
        Ok(V::derived(&all))
    }
}

/// Whether the method call hands on its receiver's items unchanged: an iterator or copy
/// of them (`iter`, `copied`, `collect`, `clone`, …), or `map` with a closure that
/// returns its argument, cast or dereferenced (`|&c| c as u64`, `|c| *c`).
fn passes_items_through(mc: &ExprMethodCall) -> bool {
    let m = mc.method.to_string();
    if mc.args.is_empty() {
        return matches!(
            m.as_str(),
            "iter" | "into_iter" | "copied" | "cloned" | "collect" | "to_vec" | "into_vec" | "clone" | "to_owned"
        );
    }
    let (true, [Expr::Closure(c)]) = (m == "map", mc.args.iter().collect::<Vec<_>>().as_slice()) else {
        return false;
    };
    let [param] = c.inputs.iter().collect::<Vec<_>>()[..] else { return false };
    let mut p = param;
    let name = loop {
        match p {
            syn::Pat::Reference(r) => p = &r.pat,
            syn::Pat::Type(t) => p = &t.pat,
            syn::Pat::Ident(i) if i.subpat.is_none() => break i.ident.to_string(),
            _ => return false,
        }
    };
    let mut b = &*c.body;
    loop {
        match b {
            Expr::Cast(x) => b = &x.expr,
            Expr::Paren(x) => b = &x.expr,
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => b = &u.expr,
            Expr::Path(p) => return p.path.is_ident(&name),
            _ => return false,
        }
    }
}

/// Whether the arguments of the standard method `m` are counts, steps or numbers.
fn int_args(m: &str) -> bool {
    matches!(
        m,
        "step_by"
            | "skip"
            | "take"
            | "chunks"
            | "chunks_exact"
            | "rchunks"
            | "windows"
            | "truncate"
            | "rotate_left"
            | "rotate_right"
            | "split_at"
            | "nth"
            | "repeat"
            | "min"
            | "max"
            | "clamp"
            | "pow"
            | "div_ceil"
            | "div_euclid"
            | "rem_euclid"
            | "saturating_sub"
            | "saturating_add"
            | "checked_sub"
            | "checked_add"
            | "abs_diff"
            | "is_multiple_of"
    )
}

/// Whether the communicator method `m` receives point to point (its buffers are filled
/// by one peer's send).
fn p2p_receives(m: &str) -> bool {
    matches!(m, "recv" | "irecv" | "sendrecv" | "sendrecv_replace" | "recv_any" | "irecv_any" | "recv_object")
}

/// What a broadcast's root held, as its members hold it after the call: numbers and
/// values the same everywhere as they are, exact data as it is (the same wherever its
/// hash is), other data exact under a hash of the call (`salt`) and its place; `None`
/// for what is not plain data (a communicator, a request, a closure).
fn root_held<'a>(v: &V<'a>, salt: u64, i: &mut usize) -> Option<V<'a>> {
    Some(match v {
        V::Int(_) | V::Float(..) | V::Bool(_) | V::Agreed | V::Uniform | V::Unit | V::Opt(None) => v.clone(),
        V::Opaque { comm: false, fp } if value::is_exact(*fp) => v.clone(),
        V::Opaque { comm: false, fp } => {
            *i += 1;
            let d = V::data(fp_of(&[&V::Int(salt as i128), &V::Int(*fp as i128), &V::Int(*i as i128)]));
            value::mark_exact(&d);
            d
        }
        V::List(l) => V::list(l.iter().map(|x| root_held(x, salt, i)).collect::<Option<_>>()?),
        V::Tuple(l) => V::Tuple(l.iter().map(|x| root_held(x, salt, i)).collect::<Option<_>>()?),
        V::Opt(Some(x)) => V::Opt(Some(Box::new(root_held(x, salt, i)?))),
        _ => return None,
    })
}

/// Whether a member's buffer `v` can take the root's value `h`: lists of one length,
/// tuples of one arity, and unknown data of any shape (a buffer the check does not see
/// into).
fn same_shape(h: &V, v: &V) -> bool {
    match (h, v) {
        (V::List(a), V::List(b)) => a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| same_shape(x, y)),
        (V::Tuple(a), V::Tuple(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_shape(x, y)),
        (V::List(_) | V::Tuple(_), _) | (_, V::List(_) | V::Tuple(_)) => false,
        _ => true,
    }
}

/// A value every rank now holds alike: known numbers stay known (a float the same on
/// every rank), the rest is [`V::Agreed`].
fn agree_known(v: V<'_>) -> V<'_> {
    match v {
        V::Int(_) | V::Bool(_) => v,
        V::Float(x, _) => V::Float(x, true),
        V::List(items) => V::list(items.iter().cloned().map(agree_known).collect()),
        V::Tuple(items) => V::Tuple(items.into_iter().map(agree_known).collect()),
        V::Opt(Some(x)) => V::Opt(Some(Box::new(agree_known(*x)))),
        v => agree(v),
    }
}

/// The `fp`s of the data in `v` (a buffer's items), in order.
fn data_leaves(v: &V, out: &mut Vec<u64>) {
    match v {
        V::List(items) => items.iter().for_each(|x| data_leaves(x, out)),
        V::Tuple(items) => items.iter().for_each(|x| data_leaves(x, out)),
        V::Opt(Some(x)) => data_leaves(x, out),
        V::Opaque { comm: false, fp } => out.push(*fp),
        _ => out.push(0),
    }
}

/// `v` with the same shape, each item from `next`.
/// `v`'s shape, each item filled with what indexing `whole` there reads (item `i` of a
/// list is `whole[i]`, [`V::derived`] of the two), passed through `leaf`: ranks of one
/// call that held the buffer in different shapes (one a list, another data whose shape
/// the check does not know) read each item alike after it.
fn fill_indexed<'a>(v: V<'a>, whole: V<'a>, leaf: &mut dyn FnMut(V<'a>) -> V<'a>) -> V<'a> {
    let at = |i: usize| V::derived(&[&whole, &V::Int(i as i128)]);
    match v {
        V::List(items) => {
            V::list(items.iter().cloned().enumerate().map(|(i, x)| fill_indexed(x, at(i), leaf)).collect())
        }
        V::Tuple(items) => V::Tuple(items.into_iter().enumerate().map(|(i, x)| fill_indexed(x, at(i), leaf)).collect()),
        V::Opt(Some(x)) => V::Opt(Some(Box::new(fill_indexed(*x, whole, leaf)))),
        v @ (V::Comm(_) | V::Batch(_) | V::Req(_) | V::Tag(_) | V::Name(_) | V::Closure(_) | V::Unit) => v,
        v if v.has_comm() => V::Opaque { comm: true, fp: 0 },
        _ => leaf(whole),
    }
}

fn fill_uniform<'a>(v: V<'a>, next: &mut dyn FnMut() -> V<'a>) -> V<'a> {
    match v {
        V::List(items) => V::list(items.iter().cloned().map(|x| fill_uniform(x, next)).collect()),
        V::Tuple(items) => V::Tuple(items.into_iter().map(|x| fill_uniform(x, next)).collect()),
        V::Opt(Some(x)) => V::Opt(Some(Box::new(fill_uniform(*x, next)))),
        v @ (V::Comm(_) | V::Batch(_) | V::Req(_) | V::Tag(_) | V::Name(_) | V::Closure(_) | V::Unit) => v,
        v if v.has_comm() => V::Opaque { comm: true, fp: 0 },
        _ => next(),
    }
}

/// What a reduction over the groups `over` makes of data the same within each group of
/// `within`.
enum Composed {
    /// The same on every rank.
    Everyone,
    /// The same within each of these groups.
    Groups(super::groups::Groups),
    /// Not a partition the check can follow (a group meeting one of `within` twice, a
    /// rank not known): plain data.
    Unknown,
}

/// A composition computed, with the two partitions it was computed from (held, so their
/// addresses, the key, are not reused while it is kept).
type ComposedEntry = (super::groups::Groups, super::groups::Groups, Option<super::groups::Groups>);

thread_local! {
    static COMPOSED: std::cell::RefCell<HashMap<(usize, usize), ComposedEntry>> = Default::default();
}

/// Forgets the compositions (at the start of each check).
pub(super) fn reset_composed() {
    COMPOSED.with(|c| c.borrow_mut().clear());
}

/// Rank x's reduction over `over`'s group combines the groups of `within` its members
/// stand in for. Where on every rank they are distinct, and the unions form a partition
/// (two ranks' unions equal or apart), the result is the same within each union.
fn compose(within: &super::groups::Groups, over: &super::groups::Groups, size: usize) -> Composed {
    let key = (std::rc::Rc::as_ptr(within) as usize, std::rc::Rc::as_ptr(over) as usize);
    let cached = COMPOSED.with(|c| c.borrow().get(&key).map(|e| e.2.clone()));
    let g = match cached {
        Some(g) => g,
        None => {
            let g = compose_uncached(within, over, size);
            COMPOSED.with(|c| {
                let mut c = c.borrow_mut();
                if c.len() > 4096 {
                    c.clear();
                }
                c.insert(key, (within.clone(), over.clone(), g.clone()))
            });
            g
        }
    };
    match g {
        None => Composed::Unknown,
        Some(g) if g.lists.len() == 1 && g.lists[0].len() == size && g.of.iter().all(|&x| x == 0) => Composed::Everyone,
        Some(g) => Composed::Groups(g),
    }
}

fn compose_uncached(
    within: &super::groups::Partition,
    over: &super::groups::Partition,
    size: usize,
) -> Option<super::groups::Groups> {
    let mut of = vec![u32::MAX; size];
    let mut ids: HashMap<Vec<u32>, u32> = HashMap::new();
    let mut lists: Vec<Vec<usize>> = Vec::new();
    // Each group of `within` belongs to one union at most.
    let mut owner: HashMap<u32, u32> = HashMap::new();
    for (x, slot) in of.iter_mut().enumerate() {
        let Some(members) = over.group(x) else { continue };
        let mut parts: Vec<u32> = Vec::with_capacity(members.len());
        for &y in members {
            let p = *within.of.get(y)?;
            if p == u32::MAX {
                return None;
            }
            parts.push(p);
        }
        parts.sort_unstable();
        if parts.windows(2).any(|w| w[0] == w[1]) {
            return None; // one group counted twice
        }
        let next = ids.len() as u32;
        let id = *ids.entry(parts.clone()).or_insert_with(|| {
            let mut l: Vec<usize> = parts.iter().flat_map(|&p| within.lists[p as usize].iter().copied()).collect();
            l.sort_unstable();
            lists.push(l);
            next
        });
        for &p in &parts {
            if *owner.entry(p).or_insert(id) != id {
                return None; // two unions share a group: not a partition
            }
        }
        *slot = id;
    }
    Some(std::rc::Rc::new(super::groups::Partition { of, lists }))
}

/// Whether `body` calls a method named as one of dist's ops (`all_reduce`, `send`, …).
fn calls_an_op(body: &Expr) -> bool {
    struct Finder(bool);
    impl<'ast> syn::visit::Visit<'ast> for Finder {
        fn visit_expr_method_call(&mut self, m: &'ast ExprMethodCall) {
            self.0 |= dist_ops::find(&m.method.to_string()).is_some();
            syn::visit::visit_expr_method_call(self, m);
        }
    }
    let mut f = Finder(false);
    syn::visit::Visit::visit_expr(&mut f, body);
    f.0
}
