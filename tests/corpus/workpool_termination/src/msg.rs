//! The wire protocol: every message is a `[u64]` on one tag, so a single any-source
//! receive sees all of them; the first word says which kind it is.

use crate::Res;
use crate::task::Task;
use dist_runtime::Tag;

pub const CTRL: Tag<u64> = Tag::new(7);
/// Most tasks moved by one steal, and the longest message in words.
pub const MAX_BATCH: usize = 64;
pub const MAX_WORDS: usize = 2 + 2 * MAX_BATCH;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Colour { White, Black }

/// Safra's token: a colour and the sum of the message counters of the ranks it passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token { pub colour: Colour, pub count: i64 }

impl Token {
    pub fn fresh() -> Token { Token { colour: Colour::White, count: 0 } }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Msg { StealRequest, Work(Vec<Task>), NoWork, Token(Token), Terminate }

const K_STEAL: u64 = 1;
const K_WORK: u64 = 2;
const K_NOWORK: u64 = 3;
const K_TOKEN: u64 = 4;
const K_TERM: u64 = 5;

impl Msg {
    /// Basic messages are the ones Safra's counters track; the token and the final
    /// broadcast are control traffic.
    pub fn is_basic(&self) -> bool {
        matches!(self, Msg::StealRequest | Msg::Work(_) | Msg::NoWork)
    }

    pub fn encode(&self) -> Vec<u64> {
        match self {
            Msg::StealRequest => vec![K_STEAL],
            Msg::NoWork => vec![K_NOWORK],
            Msg::Terminate => vec![K_TERM],
            Msg::Token(t) => vec![K_TOKEN, (t.colour == Colour::Black) as u64, t.count as u64],
            Msg::Work(tasks) => {
                let mut w = Vec::with_capacity(2 + 2 * tasks.len());
                w.push(K_WORK);
                w.push(tasks.len() as u64);
                w.extend(tasks.iter().flat_map(|t| [t.id, t.depth as u64]));
                w
            }
        }
    }

    pub fn decode(words: &[u64]) -> Res<Msg> {
        let bad = |why: &str| format!("{why}: {words:?}");
        let (&kind, rest) = words.split_first().ok_or_else(|| bad("empty message"))?;
        Ok(match kind {
            K_STEAL => Msg::StealRequest,
            K_NOWORK => Msg::NoWork,
            K_TERM => Msg::Terminate,
            K_TOKEN => match rest {
                [c, n] => {
                    Msg::Token(Token { colour: if *c == 1 { Colour::Black } else { Colour::White }, count: *n as i64 })
                }
                _ => return Err(bad("token of the wrong length").into()),
            },
            K_WORK => {
                let (&n, body) = rest.split_first().ok_or_else(|| bad("work without a count"))?;
                if body.len() != 2 * n as usize {
                    return Err(bad("work of the wrong length").into());
                }
                Msg::Work(body.chunks_exact(2).map(|w| Task { id: w[0], depth: w[1] as u32 }).collect())
            }
            _ => return Err(bad("unknown kind").into()),
        })
    }
}
