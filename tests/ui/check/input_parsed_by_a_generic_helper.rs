// The command line parsed by a helper that takes any iterator of words (`parse<I:
// Iterator<Item = String>>(args)`), its `match` on each flag with an arm for unknown
// flags that ends the program. Rank 0 sends `--n` messages, rank 1 receives the
// default's 5: wrong for every other `--n`. The runs that took the error arm do not
// count as having taken the others (each arm is taken in a run that gets through), so
// the `--n` arm is followed and the count found wrong.
use dist_runtime::prelude::*;

const T: Tag<u64> = Tag::new(1);

struct Config {
    n: usize,
}

impl Config {
    fn from_args() -> Config {
        Self::parse(std::env::args().skip(1))
    }

    fn parse<I: Iterator<Item = String>>(mut args: I) -> Config {
        let mut cfg = Config { n: 5 };
        while let Some(flag) = args.next() {
            let value = args.next().expect("a value");
            let num: usize = value.parse().expect("a number");
            match flag.as_str() {
                "--n" => cfg.n = num,
                other => panic!("unknown flag {other}"),
            }
        }
        cfg
    }
}

#[spmd(sizes = 2..=3)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let cfg = Config::from_args();
    if world.rank() == 0 {
        for _ in 0..cfg.n {
            world.send(1, T, &[1])?;
        }
    } else if world.rank() == 1 {
        for _ in 0..5 {
            world.recv(0, T, &mut [0u64])?;
        }
    }
    Ok(())
}
