//! Flags: `--root R` (the first root tried), `--lens 0,1,5,17`.

pub struct Opts {
    pub root: usize,
    pub lens: Vec<usize>,
}

impl Opts {
    pub fn parse() -> Result<Opts, String> {
        let mut o = Opts { root: 0, lens: vec![0, 1, 5, 17] };
        let args: Vec<String> = std::env::args().skip(1).collect();
        for pair in args.chunks(2) {
            let [flag, value] = pair else {
                return Err(format!("flag {} has no value", pair[0]));
            };
            match flag.as_str() {
                "--root" => o.root = value.parse().map_err(|e| format!("--root {value}: {e}"))?,
                "--lens" => {
                    o.lens = value
                        .split(',')
                        .map(|s| s.trim().parse::<usize>().map_err(|e| format!("--lens {s}: {e}")))
                        .collect::<Result<_, _>>()?
                }
                other => return Err(format!("unknown flag {other}")),
            }
        }
        Ok(o)
    }
}
