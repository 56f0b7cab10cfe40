//! Typed tags for point-to-point messages.

use std::marker::PhantomData;

/// A message tag that also fixes the element type: a `send` with `Tag<f32>` can only be
/// matched by a `recv` with a `Tag<f32>`, so a sender and receiver that disagree on the
/// type fail to compile instead of reinterpreting bytes.
///
/// ```
/// use dist_runtime::Tag;
/// const ACT: Tag<f32> = Tag::new(1);
/// assert_eq!(ACT.id(), 1);
/// ```
pub struct Tag<T> {
    id: u32,
    _t: PhantomData<fn() -> T>,
}

impl<T> Tag<T> {
    /// A tag with number `id`.
    pub const fn new(id: u32) -> Tag<T> {
        Tag { id, _t: PhantomData }
    }
    /// The tag's number.
    pub const fn id(&self) -> u32 {
        self.id
    }
}

impl<T> Clone for Tag<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Tag<T> {}
impl<T> std::fmt::Debug for Tag<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tag<{}>({})", std::any::type_name::<T>(), self.id)
    }
}
