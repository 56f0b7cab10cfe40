//! Byte encoding of requests and replies.

use crate::workload::Op;

/// Every reply is a status byte and a u64.
pub const REPLY_BYTES: usize = 9;

/// Put: whether an old value was replaced; Delete: whether the key was there; Get: the value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply { Done(bool), Value(Option<u64>) }

pub fn encode_ops(ops: &[Op]) -> Vec<u8> {
    let mut out = Vec::new();
    for op in ops {
        let (kind, value) = match op {
            Op::Get { .. } => (0u8, None),
            Op::Put { value, .. } => (1u8, Some(*value)),
            Op::Delete { .. } => (2u8, None),
        };
        out.push(kind);
        out.push(op.key().len() as u8);
        out.extend_from_slice(op.key().as_bytes());
        if let Some(v) = value {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

fn u64_at(bytes: &[u8], at: usize) -> Result<u64, String> {
    let b: [u8; 8] = bytes.get(at..at + 8).and_then(|s| s.try_into().ok()).ok_or("truncated u64")?;
    Ok(u64::from_le_bytes(b))
}

pub fn decode_ops(mut bytes: &[u8]) -> Result<Vec<Op>, String> {
    let mut ops = Vec::new();
    while !bytes.is_empty() {
        let (kind, len) = (bytes[0], *bytes.get(1).ok_or("truncated header")? as usize);
        let key = std::str::from_utf8(bytes.get(2..2 + len).ok_or("truncated key")?)
            .map_err(|e| e.to_string())?
            .to_string();
        let mut used = 2 + len;
        ops.push(match kind {
            0 => Op::Get { key },
            1 => {
                let value = u64_at(bytes, used)?;
                used += 8;
                Op::Put { key, value }
            }
            2 => Op::Delete { key },
            k => return Err(format!("unknown op kind {k}")),
        });
        bytes = &bytes[used..];
    }
    Ok(ops)
}

pub fn encode_replies(replies: &[Reply]) -> Vec<u8> {
    let mut out = Vec::with_capacity(replies.len() * REPLY_BYTES);
    for r in replies {
        let (tag, v) = match *r {
            Reply::Done(hit) => (u8::from(hit), 0),
            Reply::Value(Some(v)) => (3, v),
            Reply::Value(None) => (2, 0),
        };
        out.push(tag);
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

pub fn decode_replies(bytes: &[u8]) -> Result<Vec<Reply>, String> {
    bytes
        .chunks(REPLY_BYTES)
        .map(|c| {
            let v = u64_at(c, 1)?;
            Ok(match c[0] {
                0 => Reply::Done(false),
                1 => Reply::Done(true),
                2 => Reply::Value(None),
                3 => Reply::Value(Some(v)),
                t => return Err(format!("bad reply tag {t}")),
            })
        })
        .collect()
}
