// The package's own `macro_rules!` macros are followed through their expansion: a
// timing wrapper around a collective, a send and a receive written as macros (the
// receive binding a name the caller uses), a repetition sending to several peers, a
// macro calling a macro, and an item-position macro writing the methods of two types.
#![deny(deprecated)]
use dist_runtime::prelude::*;

const DATA: Tag<f64> = Tag::new(7);

macro_rules! timed {
    ($what:expr, $e:expr) => {{
        let t0 = std::time::Instant::now();
        let out = $e;
        let _ = ($what, t0.elapsed());
        out
    }};
}

macro_rules! send_to {
    ($c:expr, $($to:expr),+ => $v:expr) => {
        $( $c.send($to, DATA, $v)?; )+
    };
}

macro_rules! recv_from {
    ($c:expr, $from:expr => $name:ident[$n:expr]) => {
        let mut $name = vec![0.0f64; $n];
        timed!("recv", $c.recv($from, DATA, &mut $name)?);
    };
}

trait Sync {
    fn sync(&mut self, c: &Comm<World>) -> dist_runtime::Result<()>;
}

macro_rules! impl_sync {
    ($($t:ident),*) => {
        $(impl Sync for $t {
            fn sync(&mut self, c: &Comm<World>) -> dist_runtime::Result<()> {
                c.all_reduce(&mut self.w, ReduceOp::Sum)
            }
        })*
    };
}

struct Dense {
    w: Vec<f64>,
}
struct Norm {
    w: Vec<f64>,
}
impl_sync!(Dense, Norm);

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    let mut x = vec![r as f64; 4];
    timed!("all_reduce", world.all_reduce(&mut x, ReduceOp::Sum)?);
    if r == 0 && n > 2 {
        send_to!(world, 1, 2 => &x);
    }
    if (r == 1 || r == 2) && n > 2 {
        recv_from!(world, 0 => got[4]);
        assert_eq!(got, x);
    }
    let mut d = Dense { w: vec![1.0; 3] };
    let mut m = Norm { w: vec![2.0; 2] };
    d.sync(&world)?;
    m.sync(&world)?;
    assert_eq!(d.w[0], n as f64);
    Ok(())
}
