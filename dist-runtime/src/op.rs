//! `Op`: one value per call, built once in the typed layer. It is what every rank of
//! the communicator must agree on (kind, dtype, count, root, reduce op, anything else
//! hashed into `extra`), where it was called, and the name the user called: the
//! fingerprint compared across ranks (`verify`), the trace record, and what a backend
//! receives to run.

use crate::dtype::DType;
use crate::error::Site;
use crate::reduce_op::ReduceOp;

/// What kind of operation an [`Op`] is (the dispatch key; one kind covers an op and its
/// `_v`, `_async` and object forms, whose differences sit in `Op::extra` and `Op::name`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum OpKind {
    Barrier = 1,
    Broadcast,
    Reduce,
    AllReduce,
    AllGather,
    Gather,
    Scatter,
    ReduceScatter,
    AllToAll,
    CommCreate,
    /// Sends and receives on device buffers (one group; never compared across ranks).
    P2p,
    /// Inclusive prefix reduction (in place): rank r gets the reduction over ranks 0..=r.
    Scan,
    /// Exclusive prefix reduction (in place): rank r gets the reduction over ranks 0..r.
    Exscan,
    /// `Comm::alloc`: memory every rank maps (collective, in call order).
    Alloc,
    /// `Comm::agree` and `Comm::shrink`: a fault-tolerant agreement of the live ranks.
    Agree,
}

impl OpKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            OpKind::Barrier => "barrier",
            OpKind::Broadcast => "broadcast",
            OpKind::Reduce => "reduce",
            OpKind::AllReduce => "all_reduce",
            OpKind::AllGather => "all_gather",
            OpKind::Gather => "gather",
            OpKind::Scatter => "scatter",
            OpKind::ReduceScatter => "reduce_scatter",
            OpKind::AllToAll => "all_to_all",
            OpKind::CommCreate => "communicator creation",
            OpKind::P2p => "point-to-point",
            OpKind::Scan => "scan",
            OpKind::Exscan => "exscan",
            OpKind::Alloc => "alloc",
            OpKind::Agree => "agree",
        }
    }

    pub(crate) fn from_u8(v: u8) -> Option<OpKind> {
        use OpKind::*;
        [
            Barrier,
            Broadcast,
            Reduce,
            AllReduce,
            AllGather,
            Gather,
            Scatter,
            ReduceScatter,
            AllToAll,
            CommCreate,
            P2p,
            Scan,
            Exscan,
            Alloc,
            Agree,
        ]
        .into_iter()
        .find(|k| *k as u8 == v)
    }
}

/// The reduction an op applies: none, this rank's own, or a peer's read back from its
/// record (only its [`ReduceOp::code`] travels).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Reduction {
    None,
    Mine(ReduceOp),
    Peer(u64),
}

/// One collective call: what every rank must agree on, plus the user's name for the
/// call and where it was made (for messages, traces and wait records).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Op {
    pub kind: OpKind,
    /// The method the user called ("all_gather_v", "broadcast_async").
    pub name: &'static str,
    pub dtype: Option<DType>,
    /// Element count every rank must pass identically (0 where counts legitimately differ).
    pub count: u64,
    pub root: u32,
    /// The reduction it applies, if any ([`Op::reduce_op`], [`Op::reduce_code`]).
    pub reduction: Reduction,
    /// Hash of anything else that must agree (count vectors of the `_v` forms).
    pub extra: u64,
    pub site: Site,
    /// The per-rank counts of a `_v` op may differ (each rank passes its own): the
    /// backend agrees on them itself. Part of the key, so `all_to_all` and
    /// `all_to_all_v` never pass for each other.
    pub varying: bool,
    /// The record exchange that checks another op (`DIST_AGREEMENT=exchange` and
    /// backends that do not piggyback): named and placed as that op, marked in traces.
    pub agreement: bool,
    /// `extra` is a tensor's shape that every rank must pass alike (`TensorShape`):
    /// 0 no, 1 its dimensions packed (16 bits each, up to four), 2 a hash of them.
    pub shaped: u8,
}

#[cfg(feature = "candle")]
thread_local! {
    /// The shape of the tensor the ops on this thread move, while a [`TensorShape`] lives.
    static SHAPE: std::cell::Cell<Option<(u8, u64)>> = const { std::cell::Cell::new(None) };
}

/// While it lives, the collectives made on this thread carry a tensor's shape in their
/// record: ranks that pass tensors of the same element count but different shapes (a
/// 2 × 3 and a 3 × 2) fail with a mismatch naming both shapes, not sum six numbers.
#[cfg(feature = "candle")]
pub(crate) struct TensorShape(Option<(u8, u64)>);

#[cfg(feature = "candle")]
impl TensorShape {
    pub(crate) fn new(dims: &[usize]) -> TensorShape {
        let packed = dims.len() <= 4 && dims.iter().all(|&d| d < 0xffff);
        let note = if packed {
            // (Each dimension + 1, so a 0 is not lost; the count of them is where the
            // first zero field starts.)
            (1, dims.iter().enumerate().fold(0u64, |acc, (i, &d)| acc | ((d as u64 + 1) << (16 * i))))
        } else {
            (2, hash_usizes(dims))
        };
        TensorShape(SHAPE.with(|s| s.replace(Some(note))))
    }
}

#[cfg(feature = "candle")]
impl Drop for TensorShape {
    fn drop(&mut self) {
        SHAPE.with(|s| s.set(self.0));
    }
}

/// Bytes of an [`Op`]'s wire record (see [`Op::record`]).
pub(crate) const RECORD_LEN: usize = 256;

/// Bytes of the record that must agree across ranks (see [`Op::key`]).
pub(crate) const KEY_LEN: usize = 32;

impl Op {
    /// An op of `kind` called at the caller's location, named after its kind.
    #[track_caller]
    pub(crate) fn new(kind: OpKind) -> Op {
        Op {
            kind,
            name: kind.name(),
            dtype: None,
            count: 0,
            root: u32::MAX,
            reduction: Reduction::None,
            extra: 0,
            site: Site::caller(),
            varying: false,
            agreement: false,
            shaped: 0,
        }
        .with_shape()
    }

    /// The shape of the tensor this thread's ops move now, if any ([`TensorShape`]).
    /// (Only candle's tensor ops set one: without the feature, no read on the per-op
    /// path.)
    #[cfg_attr(not(feature = "candle"), allow(unused_mut))]
    fn with_shape(mut self) -> Op {
        #[cfg(feature = "candle")]
        if let Some((how, v)) = SHAPE.with(|s| s.get()) {
            self.shaped = how;
            self.extra = v;
        }
        self
    }
    pub(crate) fn named(mut self, name: &'static str) -> Self {
        debug_assert!(dist_ops::find(name).is_some(), "{name} is not in the op table (dist-ops)");
        self.name = name;
        self
    }
    pub(crate) fn dtype(mut self, d: DType) -> Self {
        self.dtype = Some(d);
        self
    }
    pub(crate) fn count(mut self, c: usize) -> Self {
        self.count = c as u64;
        self
    }
    pub(crate) fn root(mut self, r: usize) -> Self {
        self.root = r as u32;
        self
    }
    pub(crate) fn reduce(mut self, op: ReduceOp) -> Self {
        self.reduction = Reduction::Mine(op);
        self
    }

    /// This rank's reduction, for the backend (`None` when the op does not reduce, and in
    /// records read back from peers).
    pub(crate) fn reduce_op(&self) -> Option<ReduceOp> {
        match self.reduction {
            Reduction::Mine(op) => Some(op),
            _ => None,
        }
    }

    /// [`ReduceOp::code`] of the reduction, 0 when the op does not reduce.
    pub(crate) fn reduce_code(&self) -> u64 {
        match self.reduction {
            Reduction::None => 0,
            Reduction::Mine(op) => op.code(),
            Reduction::Peer(code) => code,
        }
    }

    /// The root, for the ops that have one.
    pub(crate) fn root_rank(&self) -> Option<usize> {
        (self.root != u32::MAX).then_some(self.root as usize)
    }
    pub(crate) fn varying(mut self) -> Self {
        self.varying = true;
        self
    }
    pub(crate) fn extra(mut self, e: u64) -> Self {
        self.extra = e;
        self
    }

    /// "all_reduce(f32 × 1024, op=sum) at src/main.rs:12"
    pub(crate) fn describe(&self, file: &str, line: u32) -> String {
        let mut args = Vec::new();
        if let Some(d) = self.dtype {
            args.push(format!("{d} × {}", self.count));
        } else if self.count != 0 {
            args.push(format!("{} elements", self.count));
        }
        if self.root != u32::MAX {
            args.push(format!("root={}", self.root));
        }
        if self.reduce_code() != 0 {
            args.push(match self.reduce_op() {
                // This rank's own op: its name; a peer's record only carries the code.
                Some(ReduceOp::User(u)) => {
                    format!("op=user reduction {:?} #{:x}", u.name(), self.reduce_code() >> 8 & 0xffff)
                }
                Some(ReduceOp::PreMulSum(s)) => format!("op=premulsum({s:?})"),
                _ => match ReduceOp::name_of_code(self.reduce_code()) {
                    "a user reduction" => format!("op=a user reduction #{:x}", self.reduce_code() >> 8 & 0xffff),
                    // (A peer's scale, from the bits its code carries.)
                    "premulsum" => format!("op=premulsum({:?})", ReduceOp::premul_scale_of_code(self.reduce_code())),
                    name => format!("op={name}"),
                },
            });
        }
        match self.shaped {
            0 if self.extra != 0 => args.push(format!("counts#{:x}", self.extra & 0xffff)),
            1 => {
                let dims: Vec<String> = (0..4)
                    .map(|i| (self.extra >> (16 * i)) & 0xffff)
                    .take_while(|&d| d != 0)
                    .map(|d| (d - 1).to_string())
                    .collect();
                args.push(format!("shape [{}]", dims.join(", ")));
            }
            2 => args.push(format!("shape#{:x}", self.extra & 0xffff)),
            _ => {}
        }
        // (A `_v` form by its name: its kind is the fixed form's.)
        let v = if self.varying { "_v" } else { "" };
        format!("{}{v}({}) at {file}:{line}", self.kind.name(), args.join(", "))
    }

    /// The part of the record every rank must have byte for byte: kind, dtype, root,
    /// count, reduce op, extra (two ops agree exactly when their keys are equal).
    pub(crate) fn key(&self) -> [u8; KEY_LEN] {
        let mut k = [0u8; KEY_LEN];
        k[0] = self.kind as u8;
        k[1] = self.dtype.map(|d| d as u8).unwrap_or(0);
        k[2] = self.varying as u8;
        k[3] = self.shaped;
        k[4..8].copy_from_slice(&self.root.to_le_bytes());
        k[8..16].copy_from_slice(&self.count.to_le_bytes());
        k[16..24].copy_from_slice(&self.reduce_code().to_le_bytes());
        k[24..32].copy_from_slice(&self.extra.to_le_bytes());
        k
    }

    /// A key folded to one word (each 8-byte field mixed through splitmix64 before it is
    /// combined, so no two fields cancel), for backends that agree on it in their data.
    pub(crate) fn fold_key(k: &[u8; KEY_LEN]) -> u64 {
        let mix = |mut z: u64| {
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        k.chunks_exact(8).enumerate().fold(0u64, |h, (i, w)| {
            let x = u64::from_le_bytes(w.try_into().expect("8 bytes"));
            mix(h ^ x.wrapping_add(0x9e37_79b9_7f4a_7c15u64.wrapping_mul(i as u64 + 1)))
        })
    }

    /// The fixed-size record peers compare: the [`key`](Op::key), then the call site
    /// ([`site_part`](Op::site_part)).
    pub(crate) fn record(&self) -> [u8; RECORD_LEN] {
        let mut rec = [0u8; RECORD_LEN];
        rec[..KEY_LEN].copy_from_slice(&self.key());
        rec[KEY_LEN..].copy_from_slice(&self.site_part());
        rec
    }

    /// The record after the key: the line, then the tail of the file path,
    /// NUL-terminated. It changes only with the call site, so a backend may keep it in
    /// place across the ops of one line and rewrite just the key.
    pub(crate) fn site_part(&self) -> [u8; RECORD_LEN - KEY_LEN] {
        let mut rec = [0u8; RECORD_LEN - KEY_LEN];
        rec[..4].copy_from_slice(&self.site.0.line().to_le_bytes());
        let file = self.site.0.file().as_bytes();
        // keep the tail of long paths: it names the file
        let keep = file.len().min(RECORD_LEN - KEY_LEN - 9);
        rec[8..8 + keep].copy_from_slice(&file[file.len() - keep..]);
        rec
    }

    /// Reads a peer's [`record`](Op::record): the op (None if the kind is unknown), its
    /// file and line. The site of the returned op is not the peer's; use file and line.
    pub(crate) fn from_record(rec: &[u8; RECORD_LEN]) -> (Option<Op>, String, u32) {
        let u64_at = |o: usize| u64::from_le_bytes(rec[o..o + 8].try_into().expect("8 bytes"));
        let line = u32::from_le_bytes(rec[32..36].try_into().expect("4 bytes"));
        let end = rec[40..].iter().position(|&b| b == 0).map(|p| p + 40).unwrap_or(rec.len());
        let file = String::from_utf8_lossy(&rec[40..end]).into_owned();
        let op = OpKind::from_u8(rec[0]).map(|kind| Op {
            kind,
            name: kind.name(),
            dtype: DType::from_u8(rec[1]),
            root: u32::from_le_bytes(rec[4..8].try_into().expect("4 bytes")),
            count: u64_at(8),
            reduction: match u64_at(16) {
                0 => Reduction::None,
                code => Reduction::Peer(code),
            },
            extra: u64_at(24),
            site: Site::caller(),
            varying: rec[2] != 0,
            agreement: false,
            shaped: rec[3],
        });
        (op, file, line)
    }
}

/// A hash of a list of numbers (ranks, counts, a shape) for an op record's `extra`:
/// FNV-1a, stable across processes (unlike std's `RandomState`); never 0.
pub(crate) fn hash_usizes(v: &[usize]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for x in v {
        for b in (*x as u64).to_le_bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x100_0000_01b3);
        }
    }
    h | 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_and_describes_the_peer() {
        let op = Op::new(OpKind::Reduce).named("reduce").dtype(DType::F32).count(1024).root(3).reduce(ReduceOp::Max);
        let (back, file, line) = Op::from_record(&op.record());
        let back = back.expect("known kind");
        assert_eq!(back.key(), op.key());
        assert_eq!((file.as_str(), line), (op.site.0.file(), op.site.0.line()));
        let d = back.describe(&file, line);
        assert!(d.starts_with("reduce(f32 × 1024, root=3, op=max) at "), "{d}");
        // two calls agree exactly when their keys are equal
        assert_ne!(op.key(), op.root(2).key());
        assert_ne!(op.key(), op.reduce(ReduceOp::Min).key());
        assert_ne!(op.key(), op.count(1023).key());
        assert_ne!(op.key(), op.dtype(DType::F64).key());
        assert_ne!(op.key(), op.varying().key());
        assert!(Op::from_record(&op.varying().record()).0.expect("known").varying);
    }

    /// The op table (dist-ops) that the compile-time check reads is exactly the set of
    /// communicating methods of `Comm`: a method added to one and not the other fails here.
    #[test]
    fn the_op_table_is_the_comm_api() {
        // Methods that ask about the communicator and move nothing.
        const QUERIES: &[&str] = &[
            "rank",
            "size",
            "members",
            "world_rank",
            "world_rank_of",
            "group_rank_of",
            "name",
            "backend",
            "timeout",
            "set_timeout",
            "mesh_coordinate",
            // The recovery vocabulary's local calls: who is gone, and revoking (a word
            // in the communicator's memory, no message, not collective).
            "failed_ranks",
            "revoke",
        ];
        let src = [
            include_str!("comm/mod.rs"),
            include_str!("comm/collective.rs"),
            include_str!("comm/p2p.rs"),
            include_str!("comm/request.rs"),
            include_str!("comm/nonblocking.rs"),
            include_str!("comm/object.rs"),
            include_str!("comm/group.rs"),
            include_str!("comm/recovery.rs"),
        ]
        .join("\n");
        let mut methods = Vec::new();
        let mut in_comm = false;
        for line in src.lines() {
            if line.starts_with("impl") {
                in_comm = line.starts_with("impl<G: Group> Comm<G> {");
            }
            if let (true, Some(rest)) = (in_comm, line.trim_start().strip_prefix("pub fn ")) {
                let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                methods.push(name);
            }
        }
        assert!(methods.len() > 30, "parsed too few methods: {methods:?}");
        for m in &methods {
            assert!(
                QUERIES.contains(&m.as_str()) || dist_ops::find(m).is_some(),
                "Comm::{m} communicates but is not in dist-ops' table (the compile-time check would not know it)"
            );
        }
        for spec in dist_ops::OPS {
            assert!(methods.iter().any(|m| m == spec.name), "dist-ops lists `{}`, which Comm does not have", spec.name);
            if spec.class == dist_ops::Class::Collective {
                let kinds = (1..=u8::MAX).filter_map(OpKind::from_u8).map(OpKind::name).collect::<Vec<_>>();
                assert!(kinds.contains(&spec.kind), "{}: kind {} is no OpKind", spec.name, spec.kind);
            }
        }
    }
}
