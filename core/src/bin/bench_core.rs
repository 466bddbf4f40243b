//! Native side of `npm run bench:core`: erasure encode / degraded decode throughput.
//! Prints one JSON row per line; `scripts/bench-core.mjs` adds the WASM rows and the table.

use shardgate_core::workload::Workload;
use std::time::{Duration, Instant};

const CONFIGS: [(usize, usize); 2] = [(4, 2), (8, 4)];
const BLOCK_BYTES: usize = 1 << 20;
/// Time spent per measurement; the median of several rounds is reported.
const ROUND: Duration = Duration::from_millis(300);
const ROUNDS: usize = 5;

fn gib_per_s(k: usize, m: usize, decode: bool) -> f64 {
    let mut w = Workload::new(k, m, BLOCK_BYTES, decode).expect("valid workload");
    w.run(3).expect("warm-up");
    let mut rates: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let start = Instant::now();
            let mut iters = 0u64;
            while start.elapsed() < ROUND {
                std::hint::black_box(w.run(4).expect("run"));
                iters += 4;
            }
            (iters * BLOCK_BYTES as u64) as f64
                / start.elapsed().as_secs_f64()
                / (1u64 << 30) as f64
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    rates[ROUNDS / 2]
}

fn main() {
    for (k, m) in CONFIGS {
        for decode in [false, true] {
            let op = if decode { "decode" } else { "encode" };
            let rate = gib_per_s(k, m, decode);
            println!(
                "{{\"config\":\"{k}+{m}\",\"block_bytes\":{BLOCK_BYTES},\"op\":\"{op}\",\"engine\":\"native\",\"gib_per_s\":{rate:.4}}}"
            );
        }
    }
}
