//! Group markers: the type parameter of `Comm<G>` that keeps a tensor-parallel
//! communicator from being passed where a data-parallel one is asked for.

/// A marker type naming a kind of communicator. Declare your own with [`group!`](crate::group!).
pub trait Group: Send + Sync + 'static {
    /// The name used in messages ("Tp", "Dp").
    const NAME: &'static str;
}

/// The group of every rank of the job.
#[derive(Debug, Clone, Copy)]
pub struct World;

impl Group for World {
    const NAME: &'static str = "World";
}

/// Declares a group marker type.
///
/// ```
/// dist_runtime::group!(Tp);
/// dist_runtime::group!(pub Dp);
/// fn takes_tp(_: &dist_runtime::Comm<Tp>) {}
/// ```
#[macro_export]
macro_rules! group {
    ($(#[$m:meta])* $vis:vis $name:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy)]
        $vis struct $name;
        impl $crate::Group for $name {
            const NAME: &'static str = stringify!($name);
        }
    };
}
