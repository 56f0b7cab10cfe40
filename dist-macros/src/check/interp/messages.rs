//! What point-to-point messages carry, where the check knows it. A send's buffer of
//! numbers the check computed (a work assignment `[first, count]`, a `STOP` word, a
//! count) arrives at its receiver as those numbers in the next pass, so a worker's loop
//! on what its master sent, or a receive sized by a count sent before it, is followed
//! rather than given up.
//!
//! Messages on one channel (communicator, sender, receiver, tag) are taken in the order
//! they were sent (MPI's non-overtaking rule; the runtime keeps it too): the k-th
//! receive on a channel takes its k-th send. A receive from any source counts on the
//! channel of the sender the simulation gave it.

use super::super::trace::Ev;
use super::value::V;
use super::Interp;
use std::collections::HashMap;
use std::rc::Rc;

/// One element of a message: a number the check knows, or not.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Int(i128),
    /// A float's bits, and whether it is the same on every rank ([`V::Float`]).
    Float(u64, bool),
    Bool(bool),
    Unknown,
}

/// A channel's k-th message: (communicator key, sending world rank, receiving world
/// rank, tag, k).
pub type Channel = (String, usize, usize, String, u64);

/// Each message of a pass, and what it carried where its buffer was a list with a
/// number the check knows.
pub type SentP2p = HashMap<Channel, Option<Rc<Vec<Item>>>>;

thread_local! {
    /// [`SentP2p`] as the last pass showed it, for this pass's receivers.
    static SENT: std::cell::RefCell<SentP2p> = Default::default();
    /// Whether a receive from any source the last pass did not resolve takes a sender
    /// guessed ([`Interp::any_source`]).
    static GUESS: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
    /// Whether a receive took a guessed sender since [`take_guessed`] was last called.
    static GUESSED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Whether ranks run with what messages carry ([`set_messages`]).
    static MESSAGES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    static COMPLETE: std::cell::RefCell<Vec<bool>> = Default::default();
}

/// Runs ranks with what the last pass's messages carried (or not): a receive takes its
/// message's numbers, and, once a pass has shown what was sent, a blocking receive of
/// a message no rank sent waits forever there ([`super::Stop::Blocked`]).
pub fn set_messages(on: bool) {
    MESSAGES.with(|m| m.set(on));
}

/// Whether a receive from any source took a guessed sender since the last call.
pub fn take_guessed() -> bool {
    GUESSED.with(|g| g.replace(false))
}

/// Guesses per rank and pass of a sender the last pass did not see send the message.
const UNSENT_GUESSES: u32 = 64;

/// Lets receives from any source not resolved yet take a guessed sender (or not).
pub fn set_guessing(on: bool) {
    GUESS.with(|g| g.set(on));
}

/// Sets what the last pass's messages carried, and which ranks ran to their end in it
/// (by rank): only a receive from those waits forever for a message they did not send.
pub fn set_sent_p2p(s: SentP2p, complete: Vec<bool>) {
    SENT.with(|k| *k.borrow_mut() = s);
    COMPLETE.with(|c| *c.borrow_mut() = complete);
}

/// Whether `rank` ran to its end in the last pass.
fn complete(rank: usize) -> bool {
    COMPLETE.with(|c| c.borrow().get(rank).copied().unwrap_or(false))
}

/// Whether `s` is what the receivers of this pass were given.
pub fn same_sent_p2p(s: &SentP2p) -> bool {
    SENT.with(|k| *k.borrow() == *s)
}

/// Whether this pass's receivers were given anything.
pub fn any_sent_p2p() -> bool {
    SENT.with(|k| !k.borrow().is_empty())
}

/// What matching compares of a tag: the number when known, else the name.
fn tag_id(t: &str) -> String {
    t.split(' ').next().unwrap_or(t).to_string()
}

/// A buffer's items, where it is a list with at least one number the check knows.
fn items_of(v: &V) -> Option<Vec<Item>> {
    let V::List(xs) = v else {
        return match v {
            V::Opt(Some(x)) => items_of(x),
            _ => None,
        };
    };
    let items: Vec<Item> = xs
        .iter()
        .map(|x| match x {
            V::Int(i) => Item::Int(*i),
            V::Float(f, same) => Item::Float(f.to_bits(), *same),
            V::Bool(b) => Item::Bool(*b),
            _ => Item::Unknown,
        })
        .collect();
    items.iter().any(|i| *i != Item::Unknown).then_some(items)
}

impl<'a> Interp<'a> {
    /// The sender of the receive from any source `id` on communicator `c`: the one the
    /// last pass's simulation gave it, else a guess, the member after the last sender on
    /// `c` (round robin, as a master hears its workers when they run alike). A pass with
    /// a guess is never judged: its traces only show the simulation which sender each
    /// receive takes, and its messages what they carry, so that a master serving its
    /// workers over many rounds is followed in a few passes, not one pass per round.
    ///
    /// Where no guess is made and, with messages, the last pass shows no rank sending
    /// this one the message, the receive waits forever ([`Self::blocked_here`]).
    pub(super) fn any_source(&mut self, c: usize, id: usize, tag: &V<'a>) {
        let Some(members) = self.comms[c].members.clone() else { return };
        let key = self.comms[c].key.clone();
        let src = match self.any_sources.get(&id) {
            Some(&w) => w,
            None => {
                let tag_key = match tag {
                    V::Tag(t) | V::Name(t) => tag_id(t),
                    _ => return,
                };
                let sent_by = |me: &Self, w: usize| {
                    let k = me.p2p_seq.get(&(key.clone(), w, me.rank, tag_key.clone(), false)).copied().unwrap_or(0);
                    SENT.with(|s| s.borrow().contains_key(&(key.clone(), w, me.rank, tag_key.clone(), k)))
                };
                if !GUESS.with(|g| g.get()) || members.is_empty() {
                    let shown = SENT.with(|s| !s.borrow().is_empty());
                    if MESSAGES.with(|m| m.get()) && shown && members.iter().all(|&w| complete(w) && !sent_by(self, w))
                    {
                        self.any_blocked = true;
                    }
                    return;
                }
                // A rank the last pass saw send this rank the message, else (a few
                // times a pass, so that a server's loop on guessed messages does not
                // run on without senders) the next one.
                let last = self.any_last.get(&key).copied().unwrap_or(self.rank);
                let at = members.iter().position(|&w| w == last).unwrap_or(0);
                let order = (1..=members.len()).map(|k| members[(at + k) % members.len()]);
                let Some(next) = order.clone().find(|&w| sent_by(self, w)).or_else(|| {
                    (self.unsent_guesses < UNSENT_GUESSES).then(|| order.clone().find(|&w| w != self.rank)).flatten()
                }) else {
                    return;
                };
                if !sent_by(self, next) {
                    self.unsent_guesses += 1;
                }
                self.any_sources.insert(id, next);
                GUESSED.with(|g| g.set(true));
                next
            }
        };
        self.any_last.insert(key, src);
    }

    /// The channel of the send or receive `id` just posted, and its index there (the
    /// receive's peer a receive from any source was resolved to). `None` for one whose
    /// peer is not known.
    fn channel_of(&mut self, id: usize) -> Option<Channel> {
        let ev = self.events.iter().rev().take(4).find(|e| matches!(e, Ev::P2p { id: x, .. } if *x == id))?;
        let Ev::P2p { send, comm, peer, tag, .. } = ev else { return None };
        let peer = if *peer == super::super::trace::ANY_SOURCE { *self.any_sources.get(&id)? } else { *peer };
        let (from, to) = if *send { (self.rank, peer) } else { (peer, self.rank) };
        // (Counted apart: a rank's sends to itself and its receives from itself.)
        let key = (comm.clone(), from, to, tag_id(tag), *send);
        let k = self.p2p_seq.entry(key.clone()).or_default();
        *k += 1;
        Some((key.0, key.1, key.2, key.3, *k - 1))
    }

    /// Notes what the send `id` just posted carries (`buf`, its buffer's value).
    pub(super) fn note_sent(&mut self, id: usize, buf: Option<&V<'a>>) {
        let Some(ch) = self.channel_of(id) else { return };
        self.sent_out.insert(ch, buf.and_then(items_of).map(Rc::new));
    }

    /// Notes the receive `id` just posted, and what the last pass says arrives by it
    /// (kept for [`Self::take_incoming`]).
    pub(super) fn note_received(&mut self, id: usize) {
        let ch = self.channel_of(id);
        self.incoming = ch.as_ref().and_then(|ch| SENT.with(|s| s.borrow().get(ch).cloned().flatten()));
        self.unsent = std::mem::take(&mut self.any_blocked)
            || (MESSAGES.with(|m| m.get())
                && ch.as_ref().is_some_and(|ch| {
                    complete(ch.1) && SENT.with(|s| !s.borrow().is_empty() && !s.borrow().contains_key(ch))
                }));
    }

    /// After a blocking receive's wait: the rank stops there when no rank sent the
    /// message ([`Self::note_received`]).
    pub(super) fn blocked_here(&mut self) -> Result<(), super::Flow<'a>> {
        if std::mem::take(&mut self.unsent) {
            return Err(super::Flow::Stop(super::Stop::Blocked));
        }
        Ok(())
    }

    /// What the receive posted last takes, as the last pass's sender sent it.
    pub(super) fn incoming(&self) -> Option<&Rc<Vec<Item>>> {
        self.incoming.as_ref()
    }

    /// What the receive posted last takes, written into its buffer's value `v` (`salt`
    /// names the data of the items the check does not know): `None` where the message
    /// is not known or does not fit the buffer.
    pub(super) fn take_incoming(&mut self, v: &V<'a>, salt: u64) -> Option<V<'a>> {
        let items = self.incoming.take()?;
        let V::List(old) = v else { return None };
        if items.len() > old.len() {
            return None;
        }
        let mut out: Vec<V<'a>> = items
            .iter()
            .enumerate()
            .map(|(i, x)| match x {
                Item::Int(k) => V::Int(*k),
                Item::Float(b, same) => V::Float(f64::from_bits(*b), *same),
                Item::Bool(b) => V::Bool(*b),
                Item::Unknown => V::data(super::value::fp_of(&[&V::Int(salt as i128), &V::Int(i as i128)])),
            })
            .collect();
        // (A receive from any source may take fewer elements than its buffer holds.)
        out.extend(old[items.len()..].iter().cloned());
        Some(V::list(out))
    }
}
