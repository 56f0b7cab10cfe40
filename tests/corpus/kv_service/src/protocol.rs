//! Wire format. Every request travels on the request channel with its kind in the
//! first word (dist has no receive-from-any-tag, so the server cannot tell kinds apart
//! by tag); replies come back on a tag of their own.

use dist_runtime::Tag;

#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Put = 1,
    Get = 2,
    Reply = 3,
    Done = 4,
}

impl Kind {
    pub fn from_word(w: u64) -> Option<Kind> {
        match w {
            1 => Some(Kind::Put),
            2 => Some(Kind::Get),
            3 => Some(Kind::Reply),
            4 => Some(Kind::Done),
            _ => None,
        }
    }
}

/// Requests of every kind (Put, Get, Done), in posting order per sender.
pub const REQUEST: Tag<u64> = Tag::new(0);
/// A server's answer to one Get batch: the values, in the batch's key order.
pub const REPLY: Tag<u64> = Tag::new(Kind::Reply as u32);

/// The most keys one message carries.
pub const MAX_BATCH: usize = 32;
/// Room for the longest request: the kind word and `MAX_BATCH` key/value pairs.
pub const MAX_MESSAGE: usize = 1 + 2 * MAX_BATCH;

pub fn put_message(pairs: &[(u64, u64)]) -> Vec<u64> {
    std::iter::once(Kind::Put as u64).chain(pairs.iter().flat_map(|&(k, v)| [k, v])).collect()
}

pub fn get_message(keys: &[u64]) -> Vec<u64> {
    std::iter::once(Kind::Get as u64).chain(keys.iter().copied()).collect()
}

pub fn done_message() -> Vec<u64> {
    vec![Kind::Done as u64]
}
