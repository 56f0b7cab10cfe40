//! One owner's shard of the store, and a client's view of its replies.

use crate::wire::Reply;
use crate::workload::{fnv1a, Op};
use std::collections::{BTreeMap, HashMap};

#[derive(Default)]
pub struct Shard {
    map: HashMap<String, u64>,
    pub applied: u64,
}

impl Shard {
    pub fn apply(&mut self, op: &Op) -> Reply {
        self.applied += 1;
        match op {
            Op::Put { key, value } => Reply::Done(self.map.insert(key.clone(), *value).is_some()),
            Op::Get { key } => Reply::Value(self.map.get(key).copied()),
            Op::Delete { key } => Reply::Done(self.map.remove(key).is_some()),
        }
    }

    pub fn len(&self) -> usize { self.map.len() }

    /// An order-independent digest of the contents (XOR over entries).
    pub fn digest(&self) -> u64 {
        self.map
            .iter()
            .map(|(k, v)| fnv1a(k.as_bytes()) ^ v.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .fold(0, |acc, h| acc ^ h)
    }
}

/// What one client saw, by counter name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientStats {
    counters: BTreeMap<&'static str, u64>,
}

pub const FIELDS: [&str; 7] = ["put_new", "put_replace", "get_hit", "get_miss", "get_sum", "del_hit", "del_miss"];

impl ClientStats {
    pub fn record(&mut self, op: &Op, reply: Reply) -> Result<(), String> {
        let (name, add) = match (op, reply) {
            (Op::Put { .. }, Reply::Done(false)) => ("put_new", 1),
            (Op::Put { .. }, Reply::Done(true)) => ("put_replace", 1),
            (Op::Get { .. }, Reply::Value(Some(v))) => {
                *self.counters.entry("get_sum").or_default() = self.get("get_sum").wrapping_add(v);
                ("get_hit", 1)
            }
            (Op::Get { .. }, Reply::Value(None)) => ("get_miss", 1),
            (Op::Delete { .. }, Reply::Done(hit)) => (if hit { "del_hit" } else { "del_miss" }, 1),
            (op, r) => return Err(format!("reply {r:?} does not answer {op:?}")),
        };
        *self.counters.entry(name).or_default() += add;
        Ok(())
    }

    pub fn get(&self, name: &str) -> u64 { self.counters.get(name).copied().unwrap_or(0) }

    pub fn to_words(&self) -> Vec<u64> { FIELDS.iter().map(|f| self.get(f)).collect() }

    pub fn from_words(words: &[u64]) -> ClientStats {
        let counters = FIELDS.iter().zip(words).filter(|(_, &w)| w != 0).map(|(f, &w)| (*f, w)).collect();
        ClientStats { counters }
    }
}
