//! Flags: `--rows R --cols C --mode auto|1d|2d`.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Auto,
    OneD,
    TwoD,
}

#[derive(Clone, Debug)]
pub struct Args {
    pub rows: usize,
    pub cols: usize,
    pub mode: Mode,
}

pub fn parse() -> Result<Args, String> {
    let mut a = Args { rows: 13, cols: 10, mode: Mode::Auto };
    let argv: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i < argv.len() {
        let flag = argv[i].as_str();
        let val = argv.get(i + 1).ok_or(format!("{flag} needs a value"))?;
        match flag {
            "--rows" => a.rows = val.parse().map_err(|e| format!("--rows: {e}"))?,
            "--cols" => a.cols = val.parse().map_err(|e| format!("--cols: {e}"))?,
            "--mode" => {
                a.mode = match val.as_str() {
                    "auto" => Mode::Auto,
                    "1d" => Mode::OneD,
                    "2d" => Mode::TwoD,
                    m => return Err(format!("unknown mode {m}")),
                }
            }
            _ => return Err(format!("unknown flag {flag}")),
        }
        i += 2;
    }
    if a.rows == 0 || a.cols == 0 {
        return Err("rows and cols must be positive".into());
    }
    Ok(a)
}
