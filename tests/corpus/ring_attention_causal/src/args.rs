//! `--seq L`, `--heads H`, `--dim D` (per head), `--sendrecv` (blocking exchange
//! instead of overlapped isend/irecv).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exchange {
    Overlapped,
    SendRecv,
}

#[derive(Debug, Clone)]
pub struct Opts {
    pub seq: usize,
    pub heads: usize,
    pub dim: usize,
    pub exchange: Exchange,
}

impl Opts {
    pub fn from_env() -> Result<Opts, String> {
        let mut o = Opts { seq: 37, heads: 2, dim: 4, exchange: Exchange::Overlapped };
        let args: Vec<String> = std::env::args().collect();
        let mut i = 1;
        while i < args.len() {
            let num = |i: usize| -> Result<usize, String> {
                args.get(i + 1)
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| format!("{} wants a number", args[i]))
            };
            match args[i].as_str() {
                "--seq" => {
                    o.seq = num(i)?;
                    i += 1;
                }
                "--heads" => {
                    o.heads = num(i)?;
                    i += 1;
                }
                "--dim" => {
                    o.dim = num(i)?;
                    i += 1;
                }
                "--sendrecv" => o.exchange = Exchange::SendRecv,
                a => return Err(format!("unknown argument {a}")),
            }
            i += 1;
        }
        if o.heads == 0 || o.dim == 0 {
            return Err("--heads and --dim must be positive".into());
        }
        Ok(o)
    }
}
