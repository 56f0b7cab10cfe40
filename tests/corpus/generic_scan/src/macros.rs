//! Small helpers around communication.

/// Runs `$body`, and when `SCAN_TRACE` is set prints how long it took under `$label`.
macro_rules! timed {
    ($comm:expr, $label:expr, $body:expr) => {{
        let t0 = std::time::Instant::now();
        let out = $body;
        if std::env::var_os("SCAN_TRACE").is_some() {
            eprintln!("[{}] {:<28} {:>9.1?}", $comm.rank(), $label, t0.elapsed());
        }
        out
    }};
}

/// Sends one monoid value, flattened to its words.
macro_rules! send_monoid {
    ($comm:expr, $dst:expr, $tag:expr, $value:expr) => {
        $comm.send($dst, $tag, &$crate::monoid::Monoid::to_words(&$value))
    };
}

/// Receives one value of monoid type `$m`: evaluates to `Result<$m, dist_runtime::Error>`.
macro_rules! recv_monoid {
    ($comm:expr, $src:expr, $tag:expr, $m:ty) => {{
        let mut words = vec![0u64; <$m as $crate::monoid::Monoid>::WORDS];
        $comm.recv($src, $tag, &mut words).map(|()| <$m as $crate::monoid::Monoid>::from_words(&words))
    }};
}
